"""Flatten a result dict for display: the `evaluate` command's text table, the evaluation run pages and every
job page whose kind has no presentation of its own. Names stay as the result (and docs/metrics.md) spells
them, nested ones joined with dots (soft_labels.tvd)."""


def split_result(result: dict) -> tuple[list[tuple[str, object]], list[tuple[str, list[dict]]]]:
    """(scalars, tables): one (dotted name, value) per scalar or plain list, and one (dotted name, rows)
    per list of row dicts (bins, cells, buckets)."""
    scalars, tables = [], []

    def walk(prefix, value):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else key, item)
        elif isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            tables.append((prefix, value))
        else:
            scalars.append((prefix, value))

    walk("", result)
    return scalars, tables


def table_cells(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Column names (the union over rows, in first-seen order) and the rows' cells as text."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    return columns, [[show(row.get(column)) for column in columns] for row in rows]


def show(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, list):
        return "[" + ", ".join(show(item) for item in value) + "]"
    return str(value)
