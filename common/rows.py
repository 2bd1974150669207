"""Large reads without per-row ORM work: a values_list queryset's rows straight from the database cursor,
as a pandas DataFrame.

Django applies a converter to every value of every row (JSON fields are decoded one by one through it);
on a dashboard that reads tens of thousands of rows, that costs more than the query. Here the rows come
as the driver gives them, and JSON columns are decoded column by column: numbers in one vectorised pass,
any other JSON once per distinct text (SQLite hands JSON over as text; PostgreSQL's driver decodes jsonb
itself)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from django.core.exceptions import EmptyResultSet
from django.db import connections

if TYPE_CHECKING:
    import pandas as pd


def plain_frame(queryset, columns: list[str], json_columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """The rows of a `values_list` queryset as a DataFrame with these column names; `json_columns` decoded.
    A queryset that can match nothing (a filter on an empty list) gives an empty frame."""
    import pandas as pd  # here, not at the top: keep web processes lean

    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:
        return pd.DataFrame(columns=columns)
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        frame = pd.DataFrame.from_records(cursor.fetchall(), columns=columns)
    for name in json_columns:
        frame[name] = decode_json(frame[name])
    return frame


def decode_json(texts: pd.Series) -> pd.Series:
    """JSON texts decoded: numbers through pandas in one pass, the rest once per distinct text; values that
    are not text (already decoded by the driver, or NULL) are kept."""
    import pandas as pd

    if texts.empty or not texts.map(lambda value: type(value) is str).any():
        return texts
    numbers = pd.to_numeric(texts, errors="coerce")
    rest = texts[numbers.isna() & texts.notna()]
    if rest.empty:
        return numbers.astype(object).where(texts.notna(), None)
    decoded = {text: json.loads(text) for text in rest.unique()}
    return numbers.astype(object).where(numbers.notna(), texts.map(decoded)).where(texts.notna(), None)
