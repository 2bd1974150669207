"""Soft-label measures: a model's label distribution against the human one, item by item.

Shapes: `human` and `model` are (n_items, n_classes) arrays whose rows are probability distributions, in the
same label order; both are checked (`metrics.checks.check_distributions`), so a NaN, a negative value, a row
that does not sum to 1 or a shape mismatch is a ValueError naming the array and row. Per-item functions
return (n_items,) arrays; callers average them (and bootstrap the mean: `metrics.bootstrap.bootstrap_figures`).

Per-annotator measures (LeWiDi 2025's perspectivist track) take `labels` and `predicted` of shape
(n_items, n_annotators): each annotator's label per item and the model's guess of it, NaN where the
annotator did not label the item.

References: docs/metrics.md, "Soft labels", states the reference each function is tested against.
"""

import numpy as np

from metrics.checks import check_distributions
from metrics.distributions import floor_probabilities


def check_pair(human, model) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays checked as distributions of the same shape (ValueError otherwise)."""
    human = check_distributions(human, "human")
    model = check_distributions(model, "model")
    if human.shape != model.shape:
        raise ValueError(f"human has shape {human.shape} but model has shape {model.shape}")
    return human, model


def manhattan_distance(human, model) -> np.ndarray:
    """Per-item L1 distance sum_k |human_k - model_k|, in [0, 2] (LeWiDi 2025's soft-label score)."""
    human, model = check_pair(human, model)
    return np.abs(human - model).sum(axis=1)


def total_variation_distance(human, model) -> np.ndarray:
    """Per-item total variation distance, half the L1 distance, in [0, 1] (Baan et al.'s DistCE)."""
    return manhattan_distance(human, model) / 2


def wasserstein_ordinal(human, model, positions=None) -> np.ndarray:
    """Per-item 1-Wasserstein (earth mover's) distance between distributions over ordered bins.

    positions: (n_classes,) increasing bin positions, default 0, 1, ..., n_classes - 1 (so the distance is in
    bins, as LeWiDi 2025 scores its ordinal tasks). On a line the distance is the area between the two
    cumulative distributions: sum over gaps of |CDF_human - CDF_model| * gap width.
    """
    human, model = check_pair(human, model)
    n_classes = human.shape[1]
    positions = np.arange(n_classes, dtype=float) if positions is None else np.asarray(positions, dtype=float)
    if positions.shape != (n_classes,) or not np.all(np.diff(positions) > 0):
        raise ValueError(f"positions must be {n_classes} strictly increasing numbers, got {positions.tolist()}")
    cdf_gap = np.abs(np.cumsum(human - model, axis=1)[:, :-1])
    return cdf_gap @ np.diff(positions)


def cross_entropy(human, model) -> np.ndarray:
    """Per-item cross-entropy -sum_k human_k ln model_k in nats; model probabilities are floored
    (`floor_probabilities`) so a zero where humans voted is a large, finite cost."""
    human, model = check_pair(human, model)
    return -(human * np.log(floor_probabilities(model))).sum(axis=1)


def brier_score(human, model) -> np.ndarray:
    """Per-item multi-class Brier score sum_k (model_k - human_k)^2 (Brier 1950), in [0, 2]."""
    human, model = check_pair(human, model)
    return ((model - human) ** 2).sum(axis=1)


ENTROPY_UNITS = ("bits", "nats")


def entropy_bits(distributions, name: str = "distributions") -> np.ndarray:
    """Per-row Shannon entropy in bits (0 log 0 = 0), shape (n_items,)."""
    # Sorted so that every permutation of a distribution sums in one order and gets the same entropy (ties in
    # the entropy correlation's ranks).
    rows = np.sort(check_distributions(distributions, name), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(rows > 0, rows * np.log2(np.where(rows > 0, rows, 1)), 0.0)
    return -terms.sum(axis=1)


def entropy_calibration_error(human, model, unit: str = "bits") -> np.ndarray:
    """Per-item EntCE of Baan et al. (2022): model entropy minus human entropy. Positive: the model is
    less certain than the crowd on that item; negative: more certain.

    unit: "bits" (the app's reports, like ChaosNLI's `entropy` field) or "nats" (Baan et al.'s released code,
    scipy.stats.entropy's default): the nats figure is ln 2 times the bits one."""
    if unit not in ENTROPY_UNITS:
        raise ValueError(f"unit must be one of {list(ENTROPY_UNITS)}, got {unit!r}")
    human, model = check_pair(human, model)
    gap = entropy_bits(model, "model") - entropy_bits(human, "human")
    return gap * np.log(2) if unit == "nats" else gap


# How RankCS treats classes with equal probability. "strict_pairs" (the app's reading of the paper): every
# pair of classes humans rank strictly must be ranked the same way, strictly, by the model; classes humans
# tie are free. "argsort" (Baan et al.'s released code, analysis_utils.generate_table1): the two rows'
# ascending argsorts must be equal, so ties on either side are broken by class index, lower index first.
RANKCS_TIES = ("strict_pairs", "argsort")


def ranking_calibration(human, model, ties: str = "strict_pairs") -> np.ndarray:
    """Per-item RankCS of Baan et al. (2022): 1.0 where the model orders the classes as the humans do, else 0;
    `ties` is one of RANKCS_TIES (see there). The two differ only on items with a tie in either row."""
    if ties not in RANKCS_TIES:
        raise ValueError(f"ties must be one of {list(RANKCS_TIES)}, got {ties!r}")
    human, model = check_pair(human, model)
    if ties == "argsort":
        return np.all(
            np.argsort(human, axis=1, kind="stable") == np.argsort(model, axis=1, kind="stable"), axis=1
        ).astype(float)
    humans_prefer = human[:, :, None] > human[:, None, :]
    model_agrees = model[:, :, None] > model[:, None, :]
    return np.all(~humans_prefer | model_agrees, axis=(1, 2)).astype(float)


def _check_annotator_labels(labels, predicted) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    labels = np.asarray(labels, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    if labels.ndim != 2 or labels.shape != predicted.shape:
        raise ValueError(
            f"labels and predicted must both have shape (items, annotators), got {labels.shape} and {predicted.shape}"
        )
    given = ~np.isnan(labels)
    empty = np.flatnonzero(~given.any(axis=1))
    if len(empty):
        raise ValueError(f"labels row {int(empty[0])}: no annotator labelled this item")
    missing = np.argwhere(given & ~np.isfinite(predicted))
    if len(missing):
        row, annotator = missing[0]
        raise ValueError(f"predicted row {int(row)}: no finite prediction for annotator {int(annotator)}")
    if np.isinf(labels).any():
        raise ValueError("labels must be finite or NaN (missing)")
    return labels, predicted, given


def annotator_error_rate(labels, predicted) -> np.ndarray:
    """Per-item share of the item's annotators whose label the model predicted wrongly (LeWiDi 2025's
    perspectivist error rate for categorical tasks), shape (n_items,); averaged over items by the caller."""
    labels, predicted, given = _check_annotator_labels(labels, predicted)
    wrong = np.where(given, labels != predicted, False)
    return wrong.sum(axis=1) / given.sum(axis=1)


# What LeWiDi 2025's per-annotator rating score divides the mean absolute distance by. "range": the scale's
# range, scale_max - scale_min (10 for Par's -5..+5, 5 for CSC's 1..6), so a prediction at the far end of the
# scale scores 1. "scale_points": the number of points on the scale, scale_max - scale_min + 1 (11 and 6), what
# the organisers' scoring code passes.
NORMALISERS = ("range", "scale_points")


def normalised_absolute_distance(
    labels, predicted, scale_min: float, scale_max: float, normaliser: str = "range"
) -> np.ndarray:
    """Per-item mean |label - prediction| over the item's annotators divided by the scale's `normaliser`
    (NORMALISERS; LeWiDi 2025's perspectivist score for rating tasks), in [0, 1] for values on the scale."""
    if normaliser not in NORMALISERS:
        raise ValueError(f"normaliser must be one of {list(NORMALISERS)}, got {normaliser!r}")
    if not scale_max > scale_min:
        raise ValueError(f"scale_max ({scale_max}) must be greater than scale_min ({scale_min})")
    labels, predicted, given = _check_annotator_labels(labels, predicted)
    distance = np.where(given, np.abs(labels - np.where(given, predicted, 0.0)), 0.0)
    divisor = scale_max - scale_min + (1 if normaliser == "scale_points" else 0)
    return distance.sum(axis=1) / given.sum(axis=1) / divisor


# What each figure of `soft_label_report` follows, where a paper's code does it differently.
SOFT_LABEL_CONVENTIONS = {
    "entropy_calibration_error": "mean |EntCE| in bits",
    "entropy_calibration_error_signed": "mean EntCE in bits",
    "entropy_calibration_error_nats": "mean |EntCE| in nats (Baan et al.'s code)",
    "ranking_calibration": "RankCS, ties=strict_pairs (classes humans tie are free)",
    "ranking_calibration_argsort": "RankCS, ties=argsort (Baan et al.'s code: ties broken by class index)",
    "distance_correlation": "V-statistic; interval: percentile bootstrap shifted by its bias",
    "other intervals": "percentile bootstrap",
}

# Entropies are rounded to this many decimals before they are ranked: probabilities written as text differ
# in their last bits, and two items with the same distribution must tie in Spearman's ranks.
ENTROPY_DECIMALS = 12

# Items the suites compare by distance correlation: its (n, n) matrices and their bootstrap cost grow with n^2.
DISTANCE_CORRELATION_SAMPLE = 2_000


def soft_label_report(
    human,
    model,
    ids,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    extremes: int = 10,
    jsd=None,
    more_means: dict | None = None,
) -> dict:
    """Every soft-label figure of a model against the human distributions, each with its bootstrap interval.

    human, model: (n, k) distributions; ids: (n,) item ids; jsd: (n,) per-item JS distance (or divergence)
    the caller already reports, used to rank items; computed (JS distance) when None. more_means: the
    caller's own per-item figures (name -> (n,), NaN where undefined), bootstrapped from the same resamples
    (one draw of the resampling weights serves all) and returned under "more".
    Returns {"figures": {name: value}, "intervals": {name: [low, high]}, "more": {name: ConfidenceInterval},
    "distance_correlation_items": m, "conventions": SOFT_LABEL_CONVENTIONS,
    "most_human_like": [...], "least_human_like": [...]}: the figures are means over items of TVD,
    Manhattan, cross-entropy, Brier, |EntCE| and signed EntCE (bits), |EntCE| in nats, RankCS in both tie
    conventions (RANKCS_TIES), the Pearson and Spearman
    correlation of human and model entropy, and the distance correlation of the two distributions (on a
    seeded sample of DISTANCE_CORRELATION_SAMPLE items when there are more). The two lists hold the
    `extremes` items with the smallest and the largest JSD, with both distributions.
    """
    from metrics.bootstrap import bootstrap_figures
    from metrics.distributions import js_distance

    human, model = check_pair(human, model)
    ids = np.asarray(ids, dtype=object)
    if ids.shape != (len(human),):
        raise ValueError(f"ids must have shape ({len(human)},), got {ids.shape}")
    jsd = js_distance(human, floor_probabilities(model)) if jsd is None else np.asarray(jsd, dtype=float)
    entce = entropy_calibration_error(human, model)
    per_item = {
        "tvd": total_variation_distance(human, model),
        "manhattan": manhattan_distance(human, model),
        "cross_entropy": cross_entropy(human, model),
        "brier": brier_score(human, model),
        "entropy_calibration_error": np.abs(entce),
        "entropy_calibration_error_signed": entce,
        "ranking_calibration": ranking_calibration(human, model),
        # The cited authors' conventions side by side, for comparing with their published numbers.
        "entropy_calibration_error_nats": np.abs(entce) * np.log(2),
        "ranking_calibration_argsort": ranking_calibration(human, model, ties="argsort"),
    }
    more_means = more_means or {}
    intervals = bootstrap_figures(
        len(human),
        means=per_item | more_means,
        correlations={
            "entropy_correlation": (
                np.round(entropy_bits(human, "human"), ENTROPY_DECIMALS),
                np.round(entropy_bits(model, "model"), ENTROPY_DECIMALS),
            )
        },
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
    )
    sample = np.arange(len(human))
    if len(sample) > DISTANCE_CORRELATION_SAMPLE:
        sample = np.sort(np.random.default_rng(seed).choice(len(human), DISTANCE_CORRELATION_SAMPLE, replace=False))
    if len(sample) >= 2:
        intervals |= bootstrap_figures(
            len(sample),
            distance_correlations={"distance_correlation": (human[sample], model[sample])},
            n_boot=n_boot,
            alpha=alpha,
            seed=seed,
        )
    order = np.argsort(jsd, kind="stable")

    def describe(indices) -> list[dict]:
        return [
            {"id": ids[i], "jsd": float(jsd[i]), "human": human[i].tolist(), "model": model[i].tolist()}
            for i in indices
        ]

    more = {name: intervals.pop(name) for name in more_means}
    return {
        "figures": {name: interval.estimate for name, interval in intervals.items()},
        "intervals": {name: [interval.low, interval.high] for name, interval in intervals.items()},
        "more": more,
        "distance_correlation_items": len(sample),
        "conventions": SOFT_LABEL_CONVENTIONS,
        "most_human_like": describe(order[:extremes]),
        "least_human_like": describe(order[::-1][:extremes]),
    }
