"""The apps depend one way (import-linter contracts in pyproject.toml): the tree keeps them, and a reverse
import added to a copy of the tree breaks them, so the check can fail."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
    )


@pytest.fixture
def tree_copy(tmp_path):
    """The packages' Python files and pyproject.toml, copied (import-linter reads imports without running them)."""
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "*.html", "*.json")
        )
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_tree_keeps_every_contract():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "reverse_import", "contract"),
    [
        ("core/roles.py", "from annotation.models import Project", "Apps depend one way"),
        ("jobs/models.py", "from evaluation import runs", "Apps depend one way"),
        ("annotation/services/crowd/crowd.py", "from recruitment.services import settle", "Apps depend one way"),
        ("metrics/regression.py", "from common import readers", "Apps depend one way"),
        (
            "annotation/tasktypes/nli_label.py",
            "from annotation.services import projects",
            "Task types ask nothing of the models or the services",
        ),
        # The core reaches the label-variation app only through what it registers.
        ("annotation/views/work.py", "from label_variation.services import reasons", "Apps depend one way"),
        ("dataset_io/formats/jsonl.py", "from label_variation.models import ReasonTag", "Apps depend one way"),
        (
            "annotation/services/assignments.py",
            "from annotation.services.crowd import pay",
            "The study core imports no feature folder",
        ),
        # ... and the dataset app only through what it registers (and the URLs config includes).
        ("annotation/views/dashboard.py", "from dataset_io.services import exporters", "Apps depend one way"),
        ("dataset_io/services/importers.py", "from evaluation import runs", "Apps depend one way"),
        (
            "annotation/services/study_settings.py",
            "from annotation.services.analysis import agreement",
            "The study core imports no feature folder",
        ),
        (
            "jobs/tasks.py",
            "from jobs import services",
            "Jobs: starting one leads to running it, never the other way round",
        ),
        (
            "jobs/workers.py",
            "from jobs import running",
            "Jobs: starting one leads to running it, never the other way round",
        ),
    ],
)
def test_a_reverse_import_breaks_a_contract(tree_copy, module, reverse_import, contract):
    path = tree_copy / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{reverse_import}\n", encoding="utf-8")
    result = lint_imports(tree_copy)
    assert result.returncode == 1, result.stdout[-3000:]
    assert f"{contract} BROKEN" in result.stdout
