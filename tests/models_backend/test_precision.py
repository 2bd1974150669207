"""Inference precisions: the int8 CPU fast path against fp32, and precisions a device cannot run."""
import json

import numpy as np
import pytest
import torch
from conftest import PAIRS, build_bert_classifier, write_pairs_jsonl
from django.core.management import CommandError, call_command

from models_backend.devices import pick_precision
from models_backend.prediction import predict_file


def probabilities(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return np.array([[row["probabilities"][name] for name in ("entailment", "neutral", "contradiction")] for row in rows])


def test_int8_fast_path_agrees_with_fp32(tmp_path):
    # Weights at the usual BERT scale (the shared tiny model's are 25 times larger, which no trained model has).
    tiny_nli = tmp_path / "nli"
    build_bert_classifier(tiny_nli, initializer_range=0.02, seed=1)
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    fp32 = predict_file(tiny_nli, source, tmp_path / "fp32.jsonl", device="cpu")
    int8 = predict_file(tiny_nli, source, tmp_path / "int8.jsonl", device="cpu", precision="int8")
    assert (fp32["precision"], int8["precision"]) == ("fp32", "int8")
    reference, fast = probabilities(tmp_path / "fp32.jsonl"), probabilities(tmp_path / "int8.jsonl")
    assert np.array_equal(reference.argmax(axis=1), fast.argmax(axis=1))
    assert np.abs(reference - fast).max() < 0.01
    assert not np.array_equal(reference, fast)  # the quantised model really ran


def test_predict_command_takes_precision(tiny_nli, tmp_path, capsys):
    source = write_pairs_jsonl(tmp_path / "in.jsonl", PAIRS[:3])
    call_command("predict", model=str(tiny_nli), input=str(source), output=str(tmp_path / "o.jsonl"),
                 precision="int8", json=True)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["precision"] == "int8"
    with pytest.raises(CommandError, match="needs a CUDA device"):
        call_command("predict", model=str(tiny_nli), input=str(source), output=str(tmp_path / "o.jsonl"),
                     precision="fp16", device="cpu")


def test_precision_choice_per_device():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert pick_precision(cpu) == "fp32" and pick_precision(cuda) == "fp16"
    assert pick_precision(cuda, "bf16") == "bf16" and pick_precision(cpu, "int8") == "int8"
    with pytest.raises(ValueError, match="CPU only"):
        pick_precision(cuda, "int8")
    with pytest.raises(ValueError, match="must be one of"):
        pick_precision(cpu, "fp8")
