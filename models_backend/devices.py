"""Device and precision choice: CUDA when present (half precision), otherwise CPU (float32).

Precisions: ``fp32``; ``fp16`` / ``bf16`` (CUDA only: a whole model in half precision rounds its residual
stream and layer norms too); ``bf16-linear``: the encoder's linear layers multiply in bfloat16 while the rest
stays float32 (CPU only, and only on a CPU with native bfloat16 units, AVX512-BF16 or AMX: elsewhere it would
be slower than fp32); ``int8``: the encoder's linear layers dynamically quantised to int8 (CPU only: PyTorch's
int8 kernels are CPU kernels). ``auto`` is fp16 on CUDA and fp32 on CPU.

On a CPU, an fp32 classifier's linear layers run on oneDNN's inner product (``onednn_linear``): the same
float32 products, 1.6-1.8 times as fast as PyTorch's default matrix product on this project's AMD EPYC
development machine (docs/models.md, "Benchmark").
"""

import gc
import warnings

import torch

from .model_kinds import PRECISIONS

_DTYPES = {
    "fp32": torch.float32,
    "bf16-linear": torch.float32,
    "int8": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}


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
    if requested in ("int8", "bf16-linear") and device.type != "cpu":
        raise ValueError(f"precision {requested!r} runs on the CPU only; use fp16 or bf16 on a GPU")
    if requested == "bf16-linear" and not cpu_has_bf16():
        raise ValueError(
            "precision 'bf16-linear' needs a CPU with bfloat16 units (AVX512-BF16 or AMX), which "
            "this one lacks; use int8 for a faster CPU path"
        )
    if requested in ("fp16", "bf16") and device.type != "cuda":
        raise ValueError(f"precision {requested!r} needs a CUDA device; use bf16-linear or int8 for a faster CPU path")
    return requested


def release_cuda_memory() -> None:
    """Hand back to the GPU the memory PyTorch's caching allocator kept after a job: a task worker lives on
    between jobs, and blocks it keeps cached are lost to every other process on the card (another worker, a
    training run). Nothing to do where CUDA was never used."""
    if torch.cuda.is_initialized():
        gc.collect()  # a model caught in a reference cycle would keep its weights allocated
        torch.cuda.empty_cache()


def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (oneDNN's own check; torch has no public one)."""
    return torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()


def load_dtype(precision: str) -> torch.dtype:
    """The dtype to load weights in (int8 and bf16-linear models are loaded in float32 and converted afterwards)."""
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


class Bf16Linear(torch.nn.Module):
    """A linear layer that keeps its weights in bfloat16 and rounds its input to bfloat16 for the product
    (oneDNN accumulates in float32); its output goes back to the input's dtype, so the residual stream, layer
    norms, attention softmax and the task head stay float32, which is where bfloat16's 8-bit mantissa costs
    labels."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight = torch.nn.Parameter(linear.weight.detach().to(torch.bfloat16), requires_grad=False)
        self.bias = (
            None
            if linear.bias is None
            else torch.nn.Parameter(linear.bias.detach().to(torch.bfloat16), requires_grad=False)
        )

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(hidden.to(torch.bfloat16), self.weight, self.bias).to(hidden.dtype)


class OneDnnLinear(torch.nn.Module):
    """A float32 linear layer computed by oneDNN's inner product instead of PyTorch's default matrix product:
    the same float32 arithmetic, faster on the CPUs measured. Inference only (its weights take no gradients).
    torch.utils.mkldnn.MkldnnLinear does the same but is a TorchScript module, which torch deprecates."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        bias = linear.bias if linear.bias is not None else torch.zeros(linear.out_features)
        self.register_buffer("weight", linear.weight.detach().to_mkldnn())
        self.register_buffer("bias", bias.detach().to_mkldnn())

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.mkldnn_linear(hidden.contiguous().to_mkldnn(), self.weight, self.bias).to_dense()


def onednn_linear(model):
    """Swap every float32 linear layer for OneDnnLinear; a CPU build without oneDNN keeps the model as it is."""
    if torch.backends.mkldnn.is_available():
        _replace_linears(model, OneDnnLinear, keep=lambda name, linear: linear.weight.dtype != torch.float32)
    return model


def bf16_linear(model):
    """Swap the encoder's linear layers for Bf16Linear ones; the pooler and the task head stay float32 (a few
    weights that decide the label, and too little work to gain from bfloat16)."""
    _replace_linears(model.base_model, Bf16Linear, keep=lambda name, linear: name.startswith("pooler"))
    return model


def _replace_linears(root: torch.nn.Module, wrap, keep) -> None:
    """Replace each torch.nn.Linear under ``root`` by ``wrap(linear)``, except where ``keep(name, linear)``."""
    linears = [
        (name, module)
        for name, module in root.named_modules()
        if isinstance(module, torch.nn.Linear) and not keep(name, module)
    ]
    for name, linear in linears:
        parent_name, _, child = name.rpartition(".")
        setattr(root.get_submodule(parent_name), child, wrap(linear))
