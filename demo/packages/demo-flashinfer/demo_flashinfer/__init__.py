"""Stand-in for an attention library built against the framework."""

import demo_torch

__version__ = "0.5.0"
BACKEND = "cuda" if demo_torch.cuda_available() else "cpu"
