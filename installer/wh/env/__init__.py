"""A live environment: its interpreter, installed distributions, and what its loader provides."""
