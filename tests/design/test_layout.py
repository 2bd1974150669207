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
    "dataset_io",
    "label_variation",
    "recruitment",
    "evaluation",
    "models_backend",
    "operations",
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
    for feature in ("crowd", "analysis"):
        assert (services / feature / "__init__.py").is_file(), feature
    # The label-variation protocols and the datasets are Django apps of their own, beside the core
    # (docs/architecture.md).
    for app, folder in (("label_variation", "label_variation"), ("dataset_io", "datasets")):
        assert (REPO / app / "apps.py").is_file()
        assert not (services / folder).exists()


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


LARGEST_PACKAGE_SHARE = 0.35


def test_no_top_level_package_holds_more_than_a_third_of_the_product():
    """Lines of Python, migrations left out: the study core stays small beside the apps that plug into it."""
    lines = {
        package: sum(
            len(module.read_text(encoding="utf-8").splitlines())
            for module in (REPO / package).rglob("*.py")
            if "migrations" not in module.parts
        )
        for package in PRODUCT_PACKAGES
    }
    largest = max(lines, key=lines.get)
    share = lines[largest] / sum(lines.values())
    assert share <= LARGEST_PACKAGE_SHARE, f"{largest} holds {share:.1%} of {sum(lines.values())} lines: {lines}"
