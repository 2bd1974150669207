"""Progress reporting shared by commands (a tqdm bar on stderr) and background tasks."""

import sys
from contextlib import contextmanager

from tqdm import tqdm


@contextmanager
def stderr_bar(description: str, unit: str = "row"):
    """Yield a ``progress(done, total)`` callback that drives a tqdm bar on stderr."""
    bar = tqdm(desc=description, file=sys.stderr, unit=unit, dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield progress
    finally:
        bar.close()
