"""Accuracy broken down by groups: y_true, y_pred and each grouping column are (n,) arrays."""
import pandas as pd


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
