"""Device and precision choice: CUDA when present (half precision), otherwise CPU (float32)."""
import torch


def pick_device(requested: str | None = None) -> torch.device:
    """Return the requested device, or CUDA when available, else CPU.

    An explicit request for CUDA on a machine without it is an error rather than a silent fallback,
    because a job sent to a GPU worker should not crawl along on its CPU.
    """
    if requested:
        device = torch.device(requested)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {requested!r} requested but CUDA is not available")
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def inference_dtype(device: torch.device) -> torch.dtype:
    """Half precision on CUDA (twice the throughput, accuracy loss far below label noise); float32 on CPU."""
    return torch.float16 if device.type == "cuda" else torch.float32
