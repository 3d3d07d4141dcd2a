"""Stand-in for the undeclared runtime dependency."""

__version__ = "0.11.7"
