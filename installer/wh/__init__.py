"""wh: an offline wheelhouse and dependency-pinning installer for fragile GPU Python stacks."""

__version__ = "0.1.0"
