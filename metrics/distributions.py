"""Model vs human label distributions, with the ChaosNLI conventions.

Shapes: `human` and `model` are (n_items, n_classes) arrays of probabilities, rows in the dataset's label
order ([e, n, c] for NLI, [1, 2] for alphaNLI). Label arrays are (n_items,) arrays of any comparable labels.
"""

import numpy as np
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy as scipy_entropy

from metrics.checks import check_distributions, check_same_length
from metrics.classification import accuracy

PROBABILITY_FLOOR = 1e-15


def floor_probabilities(model: np.ndarray, floor: float = PROBABILITY_FLOOR) -> np.ndarray:
    """Raise probabilities below `floor` to `floor` and renormalise each row (keeps KL finite)."""
    model = np.asarray(model, dtype=float)
    floored = np.where(np.abs(model) < floor, floor, model)
    return floored / floored.sum(axis=1, keepdims=True)


def js_distance(human: np.ndarray, model: np.ndarray, squared: bool = False) -> np.ndarray:
    """Per-item Jensen-Shannon distance (natural log), shape (n_items,); `squared` gives the divergence.

    Inputs are (n_items, n_classes) distributions (callers check them: `check_distributions`). Rounding can
    make the divergence of two equal rows a tiny negative number, whose square root scipy returns as NaN;
    like the ChaosNLI scorer we count those as 0.
    """
    distance = np.nan_to_num(jensenshannon(np.asarray(human, float), np.asarray(model, float), axis=1), nan=0.0)
    return distance**2 if squared else distance


def kl_divergence(human: np.ndarray, model: np.ndarray) -> np.ndarray:
    """Per-item KL(human || model) in nats, shape (n_items,)."""
    return scipy_entropy(np.asarray(human, float), np.asarray(model, float), axis=1)


def quantile_bins(values: np.ndarray, n_bins: int = 5) -> list[tuple[float, float, np.ndarray]]:
    """Split items into `n_bins` bins by quantile of `values` (ChaosNLI's entropy bins).

    Returns (low, high, mask) per bin: edges are the minimum and the k/n_bins quantiles; a bin holds
    low <= v < high, the last one low <= v <= high. Tied values can leave a bin empty.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all():
        raise ValueError("quantile_bins needs a non-empty (n,) array of finite values")
    edges = [values.min()] + [np.quantile(values, k / n_bins) for k in range(1, n_bins + 1)]
    bins = []
    for k in range(n_bins):
        low, high = edges[k], edges[k + 1]
        upper = values <= high if k == n_bins - 1 else values < high
        bins.append((float(low), float(high), (values >= low) & upper))
    return bins


def human_vs_model_per_item(
    human: np.ndarray,
    model: np.ndarray,
    majority_label: np.ndarray,
    old_label: np.ndarray,
    predicted_label: np.ndarray,
    squared: bool = False,
) -> dict[str, np.ndarray]:
    """The per-item values whose means are `human_vs_model`'s scores, each of shape (n,): jsd, kl (model
    floored as there), majority_acc and old_acc (1.0 where the prediction is that label, else 0.0) and
    old_label_differs_from_majority; the suites bootstrap their means over items."""
    human = check_distributions(human, "human")
    model = floor_probabilities(check_distributions(model, "model"))
    check_same_length(
        human=human, model=model, majority_label=majority_label, old_label=old_label, predicted_label=predicted_label
    )
    majority_label, old_label, predicted_label = (
        np.asarray(labels, dtype=object) for labels in (majority_label, old_label, predicted_label)
    )
    return {
        "jsd": js_distance(human, model, squared=squared),
        "kl": kl_divergence(human, model),
        "majority_acc": (majority_label == predicted_label).astype(float),
        "old_acc": (old_label == predicted_label).astype(float),
        "old_label_differs_from_majority": (old_label != majority_label).astype(float),
    }


def human_vs_model(
    human: np.ndarray,
    model: np.ndarray,
    entropy: np.ndarray,
    majority_label: np.ndarray,
    old_label: np.ndarray,
    predicted_label: np.ndarray,
    squared: bool = False,
    n_bins: int = 5,
) -> dict:
    """ChaosNLI scores of one model.

    human: (n, k) human label distributions (not smoothed); model: (n, k) model distributions (floored and
    renormalised here); both checked to be distributions (ValueError otherwise); entropy: (n,) human
    entropy used for the bins (the dataset's base-2 field); majority_label, old_label, predicted_label:
    (n,) labels.
    Returns n, jsd (mean JS distance, or divergence with `squared`), kl (mean, nats), old_acc,
    majority_acc, old_label_differs_from_majority, and `bins` (5 quantile bins of entropy).
    """
    human = check_distributions(human, "human")
    model = floor_probabilities(check_distributions(model, "model"))
    check_same_length(
        human=human,
        model=model,
        entropy=entropy,
        majority_label=majority_label,
        old_label=old_label,
        predicted_label=predicted_label,
    )
    jsd = js_distance(human, model, squared=squared)
    kl = kl_divergence(human, model)
    majority_label, old_label, predicted_label = (
        np.asarray(labels, dtype=object) for labels in (majority_label, old_label, predicted_label)
    )
    bins = []
    for low, high, mask in quantile_bins(entropy, n_bins):
        count = int(mask.sum())
        bins.append(
            {
                "entropy_range": [low, high],
                "n": count,
                "majority_acc": accuracy(majority_label[mask], predicted_label[mask]),
                "old_acc": accuracy(old_label[mask], predicted_label[mask]),
                "jsd": float(jsd[mask].mean()) if count else None,
                "kl": float(kl[mask].mean()) if count else None,
            }
        )
    return {
        "n": len(jsd),
        "jsd": float(jsd.mean()),
        "kl": float(kl.mean()),
        "old_acc": accuracy(old_label, predicted_label),
        "majority_acc": accuracy(majority_label, predicted_label),
        "old_label_differs_from_majority": float(np.mean(old_label != majority_label)),
        "bins": bins,
    }
