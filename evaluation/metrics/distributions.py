"""Model vs human label distributions, with the ChaosNLI conventions.

Shapes: `human` and `model` are (n_items, n_classes) arrays of probabilities, rows in the dataset's label
order ([e, n, c] for NLI, [1, 2] for alphaNLI). Label arrays are (n_items,) arrays of any comparable labels.
"""
import numpy as np
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy as scipy_entropy

PROBABILITY_FLOOR = 1e-15


def floor_probabilities(model: np.ndarray, floor: float = PROBABILITY_FLOOR) -> np.ndarray:
    """Raise probabilities below `floor` to `floor` and renormalise each row (keeps KL finite)."""
    model = np.asarray(model, dtype=float)
    floored = np.where(np.abs(model) < floor, floor, model)
    return floored / floored.sum(axis=1, keepdims=True)


def js_distance(human: np.ndarray, model: np.ndarray, squared: bool = False) -> np.ndarray:
    """Per-item Jensen-Shannon distance (natural log), shape (n_items,); `squared` gives the divergence.

    Rounding can make the divergence of two equal rows a tiny negative number, whose square root scipy
    returns as NaN; like the ChaosNLI scorer we count those as 0.
    """
    distance = np.nan_to_num(jensenshannon(np.asarray(human, float), np.asarray(model, float), axis=1), nan=0.0)
    return distance**2 if squared else distance


def kl_divergence(human: np.ndarray, model: np.ndarray) -> np.ndarray:
    """Per-item KL(human || model) in nats, shape (n_items,)."""
    return scipy_entropy(np.asarray(human, float), np.asarray(model, float), axis=1)


def accuracy(y_true, y_pred) -> float | None:
    """Share of equal labels; None for no items."""
    y_true, y_pred = np.asarray(y_true, dtype=object), np.asarray(y_pred, dtype=object)
    return float(np.mean(y_true == y_pred)) if y_true.size else None


def quantile_bins(values: np.ndarray, n_bins: int = 5) -> list[tuple[float, float, np.ndarray]]:
    """Split items into `n_bins` bins by quantile of `values` (ChaosNLI's entropy bins).

    Returns (low, high, mask) per bin: edges are the minimum and the k/n_bins quantiles; a bin holds
    low <= v < high, the last one low <= v <= high. Tied values can leave a bin empty.
    """
    values = np.asarray(values, dtype=float)
    edges = [values.min()] + [np.quantile(values, k / n_bins) for k in range(1, n_bins + 1)]
    bins = []
    for k in range(n_bins):
        low, high = edges[k], edges[k + 1]
        upper = values <= high if k == n_bins - 1 else values < high
        bins.append((float(low), float(high), (values >= low) & upper))
    return bins


def split_half_distributions(label_counts: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Label distributions of two random halves of each item's annotators.

    label_counts: (n_items, n_classes) vote counts. The individual votes are rebuilt from the counts,
    shuffled, and split into the first floor(total/2) votes and the rest. Returns two (n_items, n_classes)
    arrays of probabilities.
    """
    label_counts = np.asarray(label_counts, dtype=int)
    n_classes = label_counts.shape[1]
    first, second = np.zeros(label_counts.shape), np.zeros(label_counts.shape)
    for row, counts in enumerate(label_counts):
        votes = rng.permutation(np.repeat(np.arange(n_classes), counts))
        half = len(votes) // 2
        first[row] = np.bincount(votes[:half], minlength=n_classes) / half
        second[row] = np.bincount(votes[half:], minlength=n_classes) / (len(votes) - half)
    return first, second


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

    human: (n, k) human label distributions (not smoothed); model: (n, k) model probabilities (floored and
    renormalised here); entropy: (n,) human entropy used for the bins (the dataset's base-2 field);
    majority_label, old_label, predicted_label: (n,) labels.
    Returns n, jsd (mean JS distance, or divergence with `squared`), kl (mean, nats), old_acc,
    majority_acc, old_label_differs_from_majority, and `bins` (5 quantile bins of entropy).
    """
    model = floor_probabilities(model)
    jsd = js_distance(human, model, squared=squared)
    kl = kl_divergence(human, model)
    majority_label, old_label, predicted_label = (
        np.asarray(labels, dtype=object) for labels in (majority_label, old_label, predicted_label)
    )
    bins = []
    for low, high, mask in quantile_bins(entropy, n_bins):
        count = int(mask.sum())
        bins.append({
            "entropy_range": [low, high],
            "n": count,
            "majority_acc": accuracy(majority_label[mask], predicted_label[mask]),
            "old_acc": accuracy(old_label[mask], predicted_label[mask]),
            "jsd": float(jsd[mask].mean()) if count else None,
            "kl": float(kl[mask].mean()) if count else None,
        })
    return {
        "n": int(len(jsd)),
        "jsd": float(jsd.mean()),
        "kl": float(kl.mean()),
        "old_acc": accuracy(old_label, predicted_label),
        "majority_acc": accuracy(majority_label, predicted_label),
        "old_label_differs_from_majority": float(np.mean(old_label != majority_label)),
        "bins": bins,
    }


def human_split_jsd(label_counts: np.ndarray, rng: np.random.Generator, squared: bool = False) -> float:
    """Human-vs-human baseline: mean JS distance (divergence with `squared`) between two random halves
    of each item's annotators; label_counts is (n_items, n_classes)."""
    first, second = split_half_distributions(label_counts, rng)
    return float(js_distance(first, second, squared=squared).mean())
