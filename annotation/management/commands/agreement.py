"""`manage.py agreement SLUG`: agreement figures of a project's annotations (see services/agreement.py)."""

from annotation.management.project_command import ProjectCommand
from annotation.services.analysis.agreement import project_agreement


class Command(ProjectCommand):
    help = "Agreement of a project's annotations: Krippendorff's alpha, pairwise figures, human baseline."

    def add_project_arguments(self, parser):
        parser.add_argument(
            "--bootstrap", type=int, default=1000, help="bootstrap resamples of items (0: no intervals)"
        )
        parser.add_argument("--seed", type=int, default=0)

    def handle_project(self, project, opts):
        if opts["bootstrap"] < 0:
            raise ValueError(f"--bootstrap must be 0 or more, got {opts['bootstrap']}")
        figures = project_agreement(project, bootstrap=opts["bootstrap"], seed=opts["seed"])
        return figures, format_table(figures)


def _number(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def _interval(ci) -> str:
    return "" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def format_table(figures: dict) -> str:
    resamples = figures["bootstrap"]["resamples"]
    # Free-text tasks (hypothesis writing) have no agreement scale: say so instead of "level None".
    level = f"Krippendorff level {figures['level']}" if figures["level"] else "no agreement scale (free text)"
    lines = [
        f"project {figures['project']} ({figures['task_type']}), {level}",
        f"items {figures['n_items']} ({figures['n_items_pairable']} with two or more annotations), "
        f"annotations {figures['n_annotations']} ({figures['n_imported_votes']} imported), workers {figures['n_workers']}",
        "",
        f"{'figure':<34}{'value':>10}  95% CI ({resamples} resamples of items)",
    ]
    rows = []
    if figures["level"]:
        rows.append(
            (
                f"krippendorff_alpha ({figures['level']})",
                figures["krippendorff_alpha"],
                figures["krippendorff_alpha_ci"],
            )
        )
    pairwise = figures["pairwise"]
    if pairwise is not None:
        rows.append((f"{pairwise['statistic']} ({pairwise['pairs']} pairs)", pairwise["value"], pairwise["ci"]))
        if "spearman" in pairwise:
            rows.append((f"spearman ({pairwise['pairs']} pairs)", pairwise["spearman"], None))
    baseline = figures["human_baseline"]
    if baseline is not None:
        for name in ("pearson", "spearman", "mse"):
            rows.append((f"human baseline {name}", baseline[name], None))
    if figures["split_half_jsd"] is not None:
        rows.append(("split-half JSD", figures["split_half_jsd"], None))
    lines += [f"{name:<34}{_number(value):>10}  {_interval(ci)}" for name, value, ci in rows]
    if figures["unavailable"]:
        lines += ["", "not available:"]
        lines += [f"  {name}: {reason}" for name, reason in figures["unavailable"].items()]
    return "\n".join(lines)
