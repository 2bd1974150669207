"""`manage.py variation_report SLUG`: a project's label variation (see services/variation.py), the same
figures as the report page's tables and GET /api/v1/projects/SLUG/variation/."""

from annotation.management.project_command import ProjectCommand
from label_variation.services.variation import report_json, report_tables, variation_report


class Command(ProjectCommand):
    help = (
        "Label variation of a project: per item the round-1 and validated label distributions and VariErr's "
        "verdict on each label; per study the share of items with variation and with errors, explanation "
        "lengths and the validators' agreement on 'makes sense'."
    )

    def handle_project(self, project, opts):
        report = variation_report(project)
        return report_json(project, report), format_tables(project.slug, report_tables(project, report))


def format_tables(slug: str, tables: list[dict]) -> str:
    """The report's tables as text: each table's title, its columns aligned, and its note."""
    if not tables:
        return f"project {slug}: no explanations yet"
    lines = [f"project {slug}"]
    for table in tables:
        rows = [[str(cell) for cell in row] for row in table["rows"]]
        widths = [max(len(str(cell)) for cell in column) for column in zip(table["columns"], *rows)]
        lines += ["", table["title"]]
        for cells in (table["columns"], *rows):
            lines.append("  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip())
        if table.get("note"):
            lines.append(table["note"])
    return "\n".join(lines)
