"""Scores for probability regression (UNLI): y_true and y_pred are (n,) arrays of probabilities."""

import numpy as np
from scipy.stats import pearsonr, spearmanr

from metrics.checks import check_probabilities, check_same_length


def unli_scores(y_true, y_pred) -> dict:
    """Pearson r, Spearman rho and mean squared error between gold probabilities and predictions.

    y_true, y_pred: (n,) probabilities in [0, 1], n >= 2 (a correlation needs two points). The
    correlations are NaN when either side is constant. Raises ValueError on anything else.
    """
    y_true, y_pred = check_probabilities(y_true, "y_true"), check_probabilities(y_pred, "y_pred")
    if check_same_length(y_true=y_true, y_pred=y_pred) < 2:
        raise ValueError(f"unli_scores needs at least 2 items, got {len(y_true)}")
    return {
        "n": int(y_true.size),
        "pearson": float(pearsonr(y_true, y_pred).statistic),
        "spearman": float(spearmanr(y_true, y_pred).statistic),
        "mse": float(np.mean((y_true - y_pred) ** 2)),
    }
