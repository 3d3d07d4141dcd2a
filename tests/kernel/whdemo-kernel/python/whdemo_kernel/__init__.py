"""whdemo_kernel: float32 vector_add / scale / silu CUDA kernels (import makes no CUDA call)."""

from whdemo_kernel._C import device_count, scale, silu, vector_add

__all__ = ["device_count", "scale", "silu", "vector_add"]
__version__ = "0.1.0"
