"""Resolution: candidates, overrides, the resolvelib provider, and conflicts explained."""
