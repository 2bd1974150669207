"""Inference precisions: the CPU fast paths (int8, bf16-linear) against fp32, and precisions a device cannot run."""

import json

import numpy as np
import pytest
import torch
from conftest import PAIRS, build_bert_classifier, write_pairs_jsonl
from django.core.management import CommandError, call_command
from transformers import AutoModelForSequenceClassification

from models_backend.devices import Bf16Linear, OneDnnLinear, cpu_has_bf16, pick_precision
from models_backend.prediction import predict_file
from models_backend.registry import inspect_checkpoint, load_model
from models_backend.runner import pair_logits


def probabilities(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return np.array(
        [[row["probabilities"][name] for name in ("entailment", "neutral", "contradiction")] for row in rows]
    )


needs_bf16_cpu = pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no bfloat16 units")


@pytest.mark.parametrize("precision", ["int8", pytest.param("bf16-linear", marks=needs_bf16_cpu)])
def test_cpu_fast_path_agrees_with_fp32(tmp_path, precision):
    # Weights at the usual BERT scale (the shared tiny model's are 25 times larger, which no trained model has).
    tiny_nli = tmp_path / "nli"
    build_bert_classifier(tiny_nli, initializer_range=0.02, seed=1)
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    fp32 = predict_file(tiny_nli, source, tmp_path / "fp32.jsonl", device="cpu")
    fast_run = predict_file(tiny_nli, source, tmp_path / "fast.jsonl", device="cpu", precision=precision)
    assert (fp32["precision"], fast_run["precision"]) == ("fp32", precision)
    reference, fast = probabilities(tmp_path / "fp32.jsonl"), probabilities(tmp_path / "fast.jsonl")
    assert np.array_equal(reference.argmax(axis=1), fast.argmax(axis=1))
    assert np.abs(reference - fast).max() < 0.01
    assert not np.array_equal(reference, fast)  # the faster model really ran


def test_cpu_fp32_runs_onednn_linear_layers_with_the_same_outputs(tmp_path):
    tiny_nli = tmp_path / "nli"
    build_bert_classifier(tiny_nli, initializer_range=0.02, seed=1)
    spec = inspect_checkpoint(tiny_nli)
    model, tokenizer = load_model(spec, torch.device("cpu"), "fp32")
    packed = [name for name, module in model.named_modules() if isinstance(module, OneDnnLinear)]
    assert "classifier" in packed and any(name.startswith("bert.encoder.") for name in packed)
    assert not any(isinstance(module, torch.nn.Linear) for module in model.modules())
    plain = AutoModelForSequenceClassification.from_pretrained(tiny_nli, local_files_only=True).eval()
    premises, hypotheses = [p for p, _ in PAIRS], [h for _, h in PAIRS]
    reference = pair_logits(plain, tokenizer, premises, hypotheses)
    np.testing.assert_allclose(pair_logits(model, tokenizer, premises, hypotheses), reference, rtol=1e-4, atol=1e-5)


@needs_bf16_cpu
def test_bf16_linear_keeps_pooler_and_head_in_float32(tiny_nli):
    model, _ = load_model(inspect_checkpoint(tiny_nli), torch.device("cpu"), "bf16-linear")
    swapped = [name for name, module in model.named_modules() if isinstance(module, Bf16Linear)]
    plain = [name for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]
    assert swapped and all(name.startswith("bert.encoder.") for name in swapped)
    assert plain == ["bert.pooler.dense", "classifier"]
    assert all(model.get_submodule(name).weight.dtype == torch.bfloat16 for name in swapped)


def test_predict_command_takes_precision(tiny_nli, tmp_path, capsys):
    source = write_pairs_jsonl(tmp_path / "in.jsonl", PAIRS[:3])
    call_command(
        "predict", model=str(tiny_nli), input=str(source), output=str(tmp_path / "o.jsonl"), precision="int8", json=True
    )
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["precision"] == "int8"
    with pytest.raises(CommandError, match="needs a CUDA device"):
        call_command(
            "predict",
            model=str(tiny_nli),
            input=str(source),
            output=str(tmp_path / "o.jsonl"),
            precision="fp16",
            device="cpu",
        )
    with pytest.raises(CommandError, match=r"precision must be one of .*, got 'bf16_linear'"):
        call_command(
            "predict", model=str(tiny_nli), input=str(source), output=str(tmp_path / "o.jsonl"), precision="bf16_linear"
        )


@needs_bf16_cpu
def test_predict_command_takes_bf16_linear(tiny_nli, tmp_path, capsys):
    source = write_pairs_jsonl(tmp_path / "in.jsonl", PAIRS[:3])
    call_command(
        "predict",
        "--precision",
        "bf16-linear",
        "--json",
        model=str(tiny_nli),
        input=str(source),
        output=str(tmp_path / "o.jsonl"),
    )
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["precision"] == "bf16-linear"


def test_precision_choice_per_device():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert pick_precision(cpu) == "fp32" and pick_precision(cuda) == "fp16"
    assert pick_precision(cuda, "bf16") == "bf16" and pick_precision(cpu, "int8") == "int8"
    for cpu_only in ("int8", "bf16-linear"):
        with pytest.raises(ValueError, match=f"precision '{cpu_only}' runs on the CPU only"):
            pick_precision(cuda, cpu_only)
    with pytest.raises(ValueError, match="must be one of auto, fp32, bf16-linear, int8, fp16, bf16, got 'fp8'"):
        pick_precision(cpu, "fp8")


def test_bf16_linear_refused_on_a_cpu_without_bfloat16_units(monkeypatch):
    monkeypatch.setattr("models_backend.devices.cpu_has_bf16", lambda: False)
    with pytest.raises(ValueError, match="needs a CPU with bfloat16 units"):
        pick_precision(torch.device("cpu"), "bf16-linear")
