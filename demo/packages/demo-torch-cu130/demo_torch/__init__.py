"""Stand-in for a CUDA build of a deep-learning framework (+cu130)."""

__version__ = "2.9.1+cu130"


def cuda_available() -> bool:
    return True
