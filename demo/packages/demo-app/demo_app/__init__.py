"""Stand-in for the serving application."""

import demo_kernel
import demo_kernels_hub  # undeclared in the metadata, imported all the same
import demo_torch

__version__ = "0.5.10"


def ready() -> str:
    gpu = "cuda" if demo_torch.cuda_available() else "cpu"
    kernel, hub = demo_kernel.__version__, demo_kernels_hub.__version__
    return f"demo-app {__version__} on {gpu}, kernel {kernel}, hub {hub}"
