"""Stand-in for a CPU-only build of a deep-learning framework."""

__version__ = "2.10.0"


def cuda_available() -> bool:
    return False
