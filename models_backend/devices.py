"""Device and precision choice: CUDA when present (half precision), otherwise CPU (float32).

Precisions: ``fp32``; ``fp16`` / ``bf16`` (CUDA only: on a CPU without native half-precision units they are
slower than fp32); ``int8``: the encoder's linear layers dynamically quantised to int8 (CPU only: PyTorch's
int8 kernels are CPU kernels). ``auto`` is fp16 on CUDA and fp32 on CPU.
"""
import warnings

import torch

from .model_kinds import PRECISIONS

_DTYPES = {"fp32": torch.float32, "int8": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


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


def pick_precision(device: torch.device, requested: str = "auto") -> str:
    """The precision to run at on ``device``; a precision the device cannot run well is an error."""
    if requested not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {requested!r}")
    if requested == "auto":
        return "fp16" if device.type == "cuda" else "fp32"
    if requested == "int8" and device.type != "cpu":
        raise ValueError("precision 'int8' runs on the CPU only; use fp16 or bf16 on a GPU")
    if requested in ("fp16", "bf16") and device.type != "cuda":
        raise ValueError(f"precision {requested!r} needs a CUDA device; use int8 for a faster CPU path")
    return requested


def load_dtype(precision: str) -> torch.dtype:
    """The dtype to load weights in (int8 models are loaded in float32 and quantised afterwards)."""
    return _DTYPES[precision]


def quantise_int8(model):
    """Dynamic int8 quantisation of the encoder's linear layers (weights per output channel, activations per
    batch); the task head stays in float32, where its few weights decide the label."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        # torch.ao.quantization announces its move to torchao; its CPU kernels are still the ones that ship.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        quantize_dynamic(model.base_model, {torch.nn.Linear: per_channel_dynamic_qconfig}, inplace=True)
    return model
