"""Scores for probability regression (UNLI): y_true and y_pred are (n,) arrays of probabilities."""
import numpy as np
from scipy.stats import pearsonr, spearmanr


def unli_scores(y_true, y_pred) -> dict:
    """Pearson r, Spearman rho and mean squared error between gold probabilities and predictions."""
    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError(f"expected two (n,) arrays, got {y_true.shape} and {y_pred.shape}")
    return {
        "n": int(y_true.size),
        "pearson": float(pearsonr(y_true, y_pred).statistic),
        "spearman": float(spearmanr(y_true, y_pred).statistic),
        "mse": float(np.mean((y_true - y_pred) ** 2)),
    }
