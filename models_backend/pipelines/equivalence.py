"""Model-backed functions for grouping equivalent atoms (inferential consistency buckets): sentence
embeddings for the cosine test and an NLI model for entailment both ways."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from models_backend.devices import pick_device
from models_backend.pipelines.antonyms import Embedder
from models_backend.registry import ModelKind, enc_indices, inspect_checkpoint, load_model
from models_backend.runner import predict_pairs


def sentence_embedder(
    embedder_dir: str | Path | None = None, device: str | None = None
) -> Callable[[list[str]], np.ndarray]:
    """texts -> (n, d) unit embeddings (default encoder: the packaged MiniLM)."""
    return Embedder(embedder_dir, pick_device(device)).embed


def nli_entailment(
    nli_dir: str | Path, device: str | None = None, batch_size: int = 64
) -> Callable[[list[str], list[str]], np.ndarray]:
    """(premises, hypotheses) -> (m,) bools: does the NLI model label each pair entailment?"""
    spec = inspect_checkpoint(nli_dir, ModelKind.NLI)
    model, tokenizer = load_model(spec, pick_device(device))
    entailment = enc_indices(spec)[0]

    def entails(premises: list[str], hypotheses: list[str]) -> np.ndarray:
        if not premises:
            return np.zeros(0, dtype=bool)
        outputs = predict_pairs(spec, model, tokenizer, premises, hypotheses, batch_size=batch_size)
        return outputs.argmax(axis=1) == entailment

    return entails
