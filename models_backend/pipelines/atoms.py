"""Atomic decomposition of hypotheses: generate candidate atoms with a causal LM, prune with an NLI model.

An atom survives when the NLI model says the hypothesis entails it; with ``defeasible=True`` atoms the
premise already entails are dropped too (they carry nothing the hypothesis adds). Output rows follow the
atoms import format ``{"example_id": ..., "atoms": [...]}``.
"""

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..dataio import PairRow, read_pairs
from ..devices import pick_device
from ..registry import ModelKind, enc_indices, inspect_checkpoint, load_model
from ..runner import Progress, predict_pairs

DEFAULT_INSTRUCTION = (
    "Break each sentence into its atomic facts: short sentences that each state one thing the sentence says, "
    "and nothing it does not say.\n\n"
)

DEFAULT_EXEMPLARS = (
    (
        "A girl in a yellow raincoat is jumping into a puddle.",
        ["A girl is wearing a raincoat.", "The raincoat is yellow.", "A girl is jumping into a puddle."],
    ),
    (
        "Three workers are repairing the roof of an old barn.",
        ["Three workers are repairing a roof.", "The roof belongs to a barn.", "The barn is old."],
    ),
    (
        "A chef slices onions quickly in a crowded kitchen.",
        ["A chef is slicing onions.", "The chef slices quickly.", "The kitchen is crowded."],
    ),
)

BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


@dataclass
class AtomPrompt:
    """Few-shot prompt: instruction, then ``Sentence: ...`` / ``Facts:`` blocks with one ``- fact`` per line."""

    instruction: str = DEFAULT_INSTRUCTION
    exemplars: Sequence[tuple[str, list[str]]] = field(default_factory=lambda: list(DEFAULT_EXEMPLARS))
    block: str = "Sentence: {sentence}\nFacts:\n"

    def __post_init__(self):
        if "{sentence}" not in self.block:
            raise ValueError("atom prompt block lacks the placeholder {sentence}")

    def render(self, hypothesis: str) -> str:
        shots = "".join(
            self.block.format(sentence=sentence) + "".join(f"- {atom}\n" for atom in atoms) + "\n"
            for sentence, atoms in self.exemplars
        )
        return self.instruction + shots + self.block.format(sentence=hypothesis)


def parse_atoms(generated: str) -> list[str]:
    """The bulleted facts at the start of the generated text, up to the first blank or non-bullet line."""
    atoms = []
    for line in generated.splitlines():
        if not line.strip():
            if atoms:
                break
            continue
        if not BULLET.match(line):
            break
        atom = " ".join(BULLET.sub("", line, count=1).split())
        if atom and atom not in atoms:
            atoms.append(atom)
    return atoms


def generate_candidates(
    model,
    tokenizer,
    hypotheses: Sequence[str],
    prompt: AtomPrompt,
    *,
    max_new_tokens: int = 80,
    batch_size: int = 8,
    progress: Progress | None = None,
) -> list[list[str]]:
    """Greedy generation per hypothesis (left-padded batches), parsed into candidate atoms."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    device = next(model.parameters()).device
    candidates = []
    with torch.inference_mode():
        for start in range(0, len(hypotheses), batch_size):
            prompts = [prompt.render(h) for h in hypotheses[start : start + batch_size]]
            batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            generated = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
            )
            new_tokens = generated[:, batch["input_ids"].shape[1] :]
            candidates.extend(
                parse_atoms(text) for text in tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            )
            if progress:
                progress(len(candidates), len(hypotheses))
    return candidates


def prune_atoms(
    spec,
    model,
    tokenizer,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    candidates: Sequence[list[str]],
    *,
    defeasible: bool = False,
    batch_size: int = 64,
) -> list[list[str]]:
    """Keep atoms the NLI model says H entails; with ``defeasible``, also drop atoms P entails."""
    entailment = enc_indices(spec)[0]
    flat = [(i, atom) for i, atoms in enumerate(candidates) for atom in atoms]
    if not flat:
        return [[] for _ in candidates]
    atoms = [atom for _, atom in flat]
    from_h = predict_pairs(spec, model, tokenizer, [hypotheses[i] for i, _ in flat], atoms, batch_size=batch_size)
    keep = from_h.argmax(axis=1) == entailment
    if defeasible:
        from_p = predict_pairs(spec, model, tokenizer, [premises[i] for i, _ in flat], atoms, batch_size=batch_size)
        keep &= from_p.argmax(axis=1) != entailment
    survivors = [[] for _ in candidates]
    for (i, atom), kept in zip(flat, np.asarray(keep)):
        if kept:
            survivors[i].append(atom)
    return survivors


def generate_atoms_file(
    lm_dir: str | Path,
    nli_dir: str | Path,
    input_path: str | Path,
    output_path: str | Path,
    *,
    defeasible: bool = False,
    prompt: AtomPrompt | None = None,
    max_new_tokens: int = 80,
    batch_size: int = 8,
    device: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """Read pairs, decompose each distinct hypothesis once, prune, write one atoms row per example id."""
    started = time.perf_counter()
    lm_spec = inspect_checkpoint(lm_dir, ModelKind.CAUSAL_LM)
    nli_spec = inspect_checkpoint(nli_dir, ModelKind.NLI)
    enc_indices(nli_spec)
    rows: list[PairRow] = list({row.id: row for row in read_pairs(input_path)}.values())
    torch_device = pick_device(device)

    distinct = list(dict.fromkeys(row.hypothesis for row in rows))
    lm, lm_tokenizer = load_model(lm_spec, torch_device)
    generated = dict(
        zip(
            distinct,
            generate_candidates(
                lm,
                lm_tokenizer,
                distinct,
                prompt or AtomPrompt(),
                max_new_tokens=max_new_tokens,
                batch_size=batch_size,
                progress=progress,
            ),
        )
    )
    del lm
    nli, nli_tokenizer = load_model(nli_spec, torch_device)
    survivors = prune_atoms(
        nli_spec,
        nli,
        nli_tokenizer,
        [r.premise for r in rows],
        [r.hypothesis for r in rows],
        [generated[r.hypothesis] for r in rows],
        defeasible=defeasible,
    )
    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    with output_path.open("w", encoding="utf-8") as handle:
        for row, atoms in zip(rows, survivors):
            handle.write(json.dumps({"example_id": row.id, "atoms": atoms}) + "\n")
    return {
        "rows": len(rows),
        "hypotheses": len(distinct),
        "candidate_atoms": sum(len(generated[r.hypothesis]) for r in rows),
        "kept_atoms": sum(len(a) for a in survivors),
        "seconds": round(time.perf_counter() - started, 3),
        "device": str(torch_device),
        "output": str(output_path),
    }
