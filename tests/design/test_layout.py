"""Folders that show the design: a newcomer finds a rule from the folder names, and no folder grows into a
flat list of everything."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = (
    "config",
    "core",
    "common",
    "metrics",
    "jobs",
    "annotation",
    "label_variation",
    "recruitment",
    "evaluation",
    "models_backend",
)
MOST_MODULES_SIDE_BY_SIDE = 20


def modules_by_folder() -> dict[Path, int]:
    counts: dict[Path, int] = {}
    for package in PRODUCT_PACKAGES:
        for module in (REPO / package).rglob("*.py"):
            if "migrations" not in module.parts and module.name != "__init__.py":
                counts[module.parent] = counts.get(module.parent, 0) + 1
    return counts


def test_no_product_folder_holds_more_than_twenty_modules_side_by_side():
    crowded = {
        str(folder.relative_to(REPO)): count
        for folder, count in modules_by_folder().items()
        if count > MOST_MODULES_SIDE_BY_SIDE
    }
    assert crowded == {}, f"split these folders by responsibility: {crowded}"


def test_the_services_of_each_feature_have_a_folder_of_their_own():
    services = REPO / "annotation" / "services"
    for feature in ("crowd", "datasets", "analysis"):
        assert (services / feature / "__init__.py").is_file(), feature
    # The label-variation protocols are a Django app of their own, beside the core (docs/architecture.md).
    assert (REPO / "label_variation" / "apps.py").is_file()
    assert not (services / "label_variation").exists()


def test_every_module_of_the_study_core_is_held_to_its_contract():
    """A module added directly to annotation/services is core: the contract that keeps the core from importing
    the feature folders must name it, or it could import them unchecked."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    study_core = next(contract for contract in contracts if contract["id"] == "study-core")
    services = REPO / "annotation" / "services"
    core = {f"annotation.services.{module.stem}" for module in services.glob("*.py") if module.name != "__init__.py"}
    assert set(study_core["source_modules"]) == core
    features = {
        f"annotation.services.{folder.name}" for folder in services.iterdir() if (folder / "__init__.py").is_file()
    }
    assert set(study_core["forbidden_modules"]) == features
