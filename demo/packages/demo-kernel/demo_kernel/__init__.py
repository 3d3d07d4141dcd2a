"""Stand-in for the compiled kernel package (sm_86 build)."""

import demo_flashinfer  # noqa: F401  (must be installed first)

__version__ = "0.4.3"
OPS = ("silu_and_mul", "rmsnorm")
