"""The result tables of common.result_tables, where the evaluation app has always imported them from."""

from common.result_tables import show, split_result, table_cells

__all__ = ["show", "split_result", "table_cells"]
