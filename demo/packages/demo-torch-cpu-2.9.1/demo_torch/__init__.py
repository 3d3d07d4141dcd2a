"""Stand-in for a CPU-only build of a deep-learning framework."""

__version__ = "2.9.1"


def cuda_available() -> bool:
    return False
