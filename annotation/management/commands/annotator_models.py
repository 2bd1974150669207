"""`manage.py annotator_models SLUG`: labels and worker reliability from annotator models (see
services/annotator_models.py)."""

from annotation.management.project_command import ProjectCommand
from annotation.services.analysis.annotator_models import project_annotator_models

NAMES = {
    "majority_vote": "majority vote",
    "wawa": "Wawa",
    "dawid_skene": "Dawid-Skene",
    "mace": "MACE",
    "glad": "GLAD",
}


class Command(ProjectCommand):
    help = "Aggregate a nominal project's labels with majority vote, Wawa, Dawid-Skene, MACE and GLAD."

    def add_project_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=0, help="seed of MACE's random restarts")

    def handle_project(self, project, opts):
        report = project_annotator_models(project, seed=opts["seed"])
        return report, format_table(report)


def format_table(report: dict) -> str:
    lines = [
        f"project {report['project']} ({report['task_type']}): {report['n_answers']} worker answers on "
        f"{report['n_items']} items by {report['n_workers']} workers",
    ]
    methods = report["methods"]
    for kind, scored in report["gold"].items():
        lines += ["", f"accuracy against {kind.replace('_', ' ')} ({scored['items']} items)"]
        lines += [f"  {NAMES[method]:<16}{scored['accuracy'][method]:.4f}" for method in methods]
    rated = [method for method in methods if method in report["reliability_meaning"]]
    if report["workers"]:
        lines += ["", f"{'worker':<24}{'answers':>8}" + "".join(f"{NAMES[method]:>13}" for method in rated)]
        for entry in report["workers"]:
            figures = "".join(f"{entry[method]:>13.3f}" for method in rated)
            lines.append(f"{entry['worker']:<24}{entry['answers']:>8}{figures}")
        lines += [""] + [f"{NAMES[method]}: {report['reliability_meaning'][method]}" for method in rated]
    if report["unavailable"]:
        lines += ["", "not available:"] + [f"  {what}: {why}" for what, why in report["unavailable"].items()]
    return "\n".join(lines)
