"""bin/gpu-check without a GPU, and what its --prepare carries (docs/models.md, "GPU check")."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from benchmarks.gpu_check import NOT_IMPORTED_BY_THE_CHECK, ON_DEVICE, runtime_requirements
from tests.conftest import REPO


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU, bin/gpu-check runs the whole check")
def test_gpu_check_without_cuda_stops_at_once_saying_so():
    # The GPU machine's python3 is the first on PATH there; here that is this virtualenv's, with torch for the CPU.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    started = time.monotonic()
    done = subprocess.run(
        [str(REPO / "bin" / "gpu-check")], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "gpu-check: no CUDA device visible to" in done.stderr and "Run it on the GPU machine" in done.stderr
    assert time.monotonic() - started < 120  # importing torch is all it does (seconds; this machine is shared)


def test_prepare_carries_the_runtime_dependencies_the_gpu_machine_lacks():
    pins = runtime_requirements()
    assert {"django", "django-tasks-db", "pytest-django"} <= set(pins)
    assert "psycopg-binary" in pins  # psycopg[binary]: the extra's requirements are followed too
    assert not {"torch", "transformers", "numpy", "tokenizers"} & set(pins)  # the machine has its own builds
    assert not (ON_DEVICE | NOT_IMPORTED_BY_THE_CHECK) & set(pins)
    from importlib import metadata

    assert pins["django"] == metadata.version("django")  # the versions this virtualenv runs
