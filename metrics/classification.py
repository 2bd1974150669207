"""Accuracy: y_true, y_pred and each grouping column are (n,) arrays of comparable labels."""

import numpy as np
import pandas as pd


def share(flags) -> float | None:
    """Share of true values in an (n,) array of bools; None for no values (the share is undefined)."""
    flags = np.asarray(flags, dtype=bool)
    return float(flags.mean()) if flags.size else None


def accuracy(y_true, y_pred) -> float | None:
    """Share of equal labels; None for no items."""
    y_true, y_pred = np.asarray(y_true, dtype=object), np.asarray(y_pred, dtype=object)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred differ in shape: {y_true.shape} and {y_pred.shape}")
    return share(y_true == y_pred)


def accuracy_by_group(y_true, y_pred, groups: dict[str, list]) -> list[dict]:
    """One row per combination of group values (in order of first appearance): the group values, n and
    accuracy. `groups` maps a column name to its (n,) values, e.g. {"template": ..., "original_label": ...}."""
    table = pd.DataFrame(groups)
    table["correct"] = pd.Series(list(y_true)) == pd.Series(list(y_pred))
    grouped = table.groupby(list(groups), sort=False)["correct"]
    summary = pd.DataFrame({"n": grouped.size(), "accuracy": grouped.mean()}).reset_index()
    return [
        {**{name: row[name] for name in groups}, "n": int(row["n"]), "accuracy": float(row["accuracy"])}
        for _, row in summary.iterrows()
    ]
