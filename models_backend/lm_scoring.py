"""Choice scoring with a causal LM: options listed as letters, each letter's log-likelihood as continuation.

The chosen option is the one whose continuation has the lowest negative log-likelihood; the softmax over
the options' log-likelihoods is the model's distribution over the options (compared with human label
distributions, e.g. by JS distance on ChaosNLI).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .runner import Progress

LETTERS = "ABCDEFGHIJ"

DEFAULT_TEMPLATE = (
    "Premise: {premise}\n"
    "Hypothesis: {hypothesis}\n"
    "Given the premise, is the hypothesis true, possibly true, or false?\n"
    "{options}\n"
    "Answer:"
)

DEFAULT_EXEMPLARS = (
    {
        "premise": "A woman in a green coat is feeding pigeons in a square.",
        "hypothesis": "Someone is giving food to birds.",
        "label": "entailment",
    },
    {
        "premise": "Two boys are kicking a ball across a muddy field.",
        "hypothesis": "The boys are on the same football team.",
        "label": "neutral",
    },
    {
        "premise": "An old man sleeps on a bench beside the river.",
        "hypothesis": "The man is running a marathon.",
        "label": "contradiction",
    },
)


@dataclass
class ChoicePrompt:
    """A few-shot multiple-choice prompt.

    ``template`` has the placeholders {premise}, {hypothesis} and {options}; options are rendered as
    ``A. entailment`` lines, and the scored continuation of option k is ``answer_prefix + letter``.
    Each exemplar is rendered with the same template followed by its answer letter.
    """

    template: str = DEFAULT_TEMPLATE
    options: tuple[str, ...] = ("entailment", "neutral", "contradiction")
    exemplars: Sequence[dict] = field(default_factory=lambda: list(DEFAULT_EXEMPLARS))
    answer_prefix: str = " "
    separator: str = "\n\n"

    def __post_init__(self):
        for placeholder in ("{premise}", "{hypothesis}", "{options}"):
            if placeholder not in self.template:
                raise ValueError(f"choice prompt template lacks the placeholder {placeholder}")
        unknown = [ex["label"] for ex in self.exemplars if ex["label"] not in self.options]
        if unknown:
            raise ValueError(f"exemplar labels {unknown} are not among the options {list(self.options)}")
        if not 2 <= len(self.options) <= len(LETTERS):
            raise ValueError(f"between 2 and {len(LETTERS)} options are needed, got {len(self.options)}")

    def _question(self, premise: str, hypothesis: str) -> str:
        listed = "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(self.options))
        return self.template.format(premise=premise, hypothesis=hypothesis, options=listed)

    def context(self, premise: str, hypothesis: str) -> str:
        shots = [
            self._question(ex["premise"], ex["hypothesis"]) + self.continuation(self.options.index(ex["label"]))
            for ex in self.exemplars
        ]
        return self.separator.join([*shots, self._question(premise, hypothesis)])

    def continuation(self, option_index: int) -> str:
        return self.answer_prefix + LETTERS[option_index]


@dataclass
class ChoiceScores:
    log_likelihoods: np.ndarray  # (n, k): summed log-probability of each option's continuation
    choices: np.ndarray  # (n,): index of the option with the lowest NLL
    distributions: np.ndarray  # (n, k): softmax over log_likelihoods, rows sum to 1


def continuation_log_likelihoods(
    model,
    tokenizer,
    contexts: Sequence[str],
    continuations: Sequence[str],
    *,
    batch_size: int = 8,
    progress: Progress | None = None,
) -> np.ndarray:
    """log P(continuation | context) for each (context, continuation) pair, shape (n,).

    Context and continuation are tokenised separately and concatenated so the continuation's tokens are
    exactly those scored, whatever the tokenizer would merge across the boundary.
    """
    sequences = []
    for context, continuation in zip(contexts, continuations):
        context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
        continuation_ids = tokenizer(continuation, add_special_tokens=False)["input_ids"]
        sequences.append((context_ids, continuation_ids))
    return token_log_likelihoods(model, _pad_id(tokenizer), sequences, batch_size=batch_size, progress=progress)


def sentence_perplexities(model, tokenizer, sentences: Sequence[str], *, batch_size: int = 16) -> np.ndarray:
    """Per-sentence perplexity exp(-mean token log-probability), every token scored after a start token."""
    start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if start is None:
        raise ValueError("the tokenizer has neither a BOS nor an EOS token to start sentences with")
    sequences = [([start], tokenizer(s, add_special_tokens=False)["input_ids"]) for s in sentences]
    totals = token_log_likelihoods(model, _pad_id(tokenizer), sequences, batch_size=batch_size)
    lengths = np.array([len(ids) for _, ids in sequences], dtype=np.float64)
    return np.exp(-totals / lengths)


def _pad_id(tokenizer) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return candidate
    return 0


def token_log_likelihoods(
    model,
    pad_id: int,
    sequences: Sequence[tuple[list[int], list[int]]],
    *,
    batch_size: int = 8,
    progress: Progress | None = None,
) -> np.ndarray:
    """Summed log-probability of each sequence's second part given its first, shape (n,).

    Sequences are batched longest first and right-padded; log-softmax runs in float32 even in half precision.
    """
    if any(not context or not continuation for context, continuation in sequences):
        raise ValueError("context and continuation must both be non-empty after tokenisation")
    device = next(model.parameters()).device
    results = np.zeros(len(sequences), dtype=np.float64)
    order = np.argsort([-(len(c) + len(x)) for c, x in sequences], kind="stable")
    done = 0
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            full = [sequences[i][0] + sequences[i][1] for i in rows]
            width = max(len(ids) for ids in full)
            input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for r, ids in enumerate(full):
                input_ids[r, : len(ids)] = torch.tensor(ids)
                mask[r, : len(ids)] = 1
            logits = model(input_ids=input_ids.to(device), attention_mask=mask.to(device)).logits.float()
            log_probs = torch.log_softmax(logits, dim=-1).cpu()
            for r, i in enumerate(rows):
                context_ids, continuation_ids = sequences[i]
                # The token at position t is predicted by the logits at position t - 1.
                positions = torch.arange(len(context_ids) - 1, len(context_ids) + len(continuation_ids) - 1)
                results[i] = float(log_probs[r, positions, torch.tensor(continuation_ids)].sum())
            done += len(rows)
            if progress:
                progress(done, len(sequences))
    return results


def score_choices(
    model,
    tokenizer,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    prompt: ChoicePrompt | None = None,
    *,
    batch_size: int = 8,
    progress: Progress | None = None,
) -> ChoiceScores:
    """Score every option of ``prompt`` for each pair; see ChoiceScores for the shapes."""
    prompt = prompt or ChoicePrompt()
    k = len(prompt.options)
    contexts, continuations = [], []
    for premise, hypothesis in zip(premises, hypotheses):
        context = prompt.context(premise, hypothesis)
        for option in range(k):
            contexts.append(context)
            continuations.append(prompt.continuation(option))
    log_likelihoods = continuation_log_likelihoods(
        model,
        tokenizer,
        contexts,
        continuations,
        batch_size=batch_size,
        progress=progress,
    ).reshape(-1, k)
    shifted = log_likelihoods - log_likelihoods.max(axis=1, keepdims=True)
    distributions = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    return ChoiceScores(log_likelihoods, log_likelihoods.argmax(axis=1), distributions)
