"""`manage.py reasons_report SLUG`: a project's disagreement reasons (see services/reasons.py), the same
figures as the report page's section and GET /api/v1/projects/SLUG/reasons/."""

from annotation.management.project_command import ProjectCommand
from label_variation.services.reasons import reasons_report


class Command(ProjectCommand):
    help = (
        "Disagreement reasons of a project: how many items carry each reason of its taxonomy, with examples, "
        "and per tagging round the two taggers' agreement and the items reconciled."
    )

    def handle_project(self, project, opts):
        report = reasons_report(project)
        return report, format_report(project.slug, report)


def _number(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_report(slug: str, report: dict) -> str:
    if not report["items"]:
        return f"project {slug}: no item has reasons yet"
    imported = f" ({report['imported_items']} imported)" if report["imported_items"] else ""
    lines = [f"project {slug}: {report['items']} items carry reasons{imported}", ""]
    width = max(len(reason["name"]) for reason in report["reasons"])
    lines.append(f"{'reason':<{width}}  {'items':>5}  share")
    for reason in report["reasons"]:
        gone = "  (no longer in the taxonomy)" if not reason["in_taxonomy"] else ""
        lines.append(f"{reason['name']:<{width}}  {reason['items']:>5}  {_number(reason['share'])}{gone}")
        lines += [
            f"    item {example['item_id']}: {example['premise']} -> {example['hypothesis']}"
            for example in reason["examples"]
        ]
    for entry in report["rounds"]:
        agreement = entry["agreement"]
        lines.append("")
        if agreement is None:
            lines.append(f"round {entry['round']}: {entry['items']} items tagged, none by two taggers yet")
            continue
        lines.append(
            f"round {entry['round']}: {agreement['units']} items with two taggers, identical sets "
            f"{_number(agreement['identical'])}, mean Cohen's kappa {_number(agreement['mean_kappa'])}, "
            f"{entry['reconciled']} reconciled"
        )
        lines += [f"  kappa {tag}: {_number(kappa)}" for tag, kappa in agreement["kappa"].items()]
    rule = report["release_rule"]
    if rule:
        lines += ["", f"the release's agg equals this rule's on {rule['matched']} of {rule['checked']} imported items"]
    return "\n".join(lines)
