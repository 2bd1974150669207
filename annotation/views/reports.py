"""The project agreement report page (authors of the project and admins only) and the audit log (admins)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from annotation.models import AuditEntry
from annotation.services import access, audit, simulation
from core import roles

# Resamples behind the page's intervals; `manage.py agreement SLUG --bootstrap N` gives more.
REPORT_BOOTSTRAP = 200
AUDIT_PAGE_ROWS = 200

PAIRWISE_NAMES = {"cohen_kappa": "Cohen's kappa", "kendall_tau": "Kendall's tau-b", "pearson": "Pearson r"}
UNAVAILABLE_NAMES = {
    "agreement": "Agreement figures",
    "krippendorff_alpha": "Krippendorff's alpha",
    "pairwise": "Pairwise agreement",
    "human_baseline": "Human baseline",
    "split_half_jsd": "Split-half JSD",
    "pairwise_ci": "Interval of the pairwise figure",
}


def figure_rows(figures: dict) -> list[dict]:
    """The figures as table rows: name, value, interval (or None) and what the figure means."""
    rows = []
    if figures["krippendorff_alpha"] is not None:
        rows.append(
            {
                "name": f"Krippendorff's alpha ({figures['level']})",
                "value": figures["krippendorff_alpha"],
                "ci": figures["krippendorff_alpha_ci"],
                "note": "all annotations, imported votes included",
            }
        )
    pairwise = figures["pairwise"]
    if pairwise is not None:
        rows.append(
            {
                "name": PAIRWISE_NAMES[pairwise["statistic"]],
                "value": pairwise["value"],
                "ci": pairwise["ci"],
                "note": f"mean over {pairwise['pairs']} pairs of workers, each on the items both annotated",
            }
        )
        if pairwise.get("spearman") is not None:
            rows.append(
                {
                    "name": "Spearman rho",
                    "value": pairwise["spearman"],
                    "ci": None,
                    "note": f"mean over {pairwise['pairs']} pairs of workers, each on the items both annotated",
                }
            )
    baseline = figures["human_baseline"]
    if baseline is not None:
        held_out = (
            f"one annotation per item against the {baseline['aggregate']} of the others ({baseline['items']} items)"
        )
        for key, name in (("pearson", "Pearson r"), ("spearman", "Spearman rho"), ("mse", "MSE")):
            if baseline[key] is not None:
                rows.append({"name": f"Human baseline: {name}", "value": baseline[key], "ci": None, "note": held_out})
    if figures["split_half_jsd"] is not None:
        rows.append(
            {
                "name": "Split-half JSD",
                "value": figures["split_half_jsd"],
                "ci": None,
                "note": "JS distance between two random halves of each item's votes",
            }
        )
    return rows


MODEL_NAMES = {
    "majority_vote": "Majority vote",
    "wawa": "Wawa",
    "dawid_skene": "Dawid-Skene",
    "mace": "MACE",
    "glad": "GLAD",
}


def annotator_model_tables(models: dict) -> dict:
    """The annotator models' result as the report's tables: accuracy on gold per method, reliability per
    worker, and what could not be computed."""
    methods = models["methods"]
    rated = [method for method in methods if method in models["reliability_meaning"]]
    return {
        "n_answers": models["n_answers"],
        "n_items": models["n_items"],
        "n_workers": models["n_workers"],
        "gold_columns": [
            f"{kind.replace('_', ' ')} ({scored['items']} items)" for kind, scored in models["gold"].items()
        ],
        "gold_rows": [
            (MODEL_NAMES[method], [scored["accuracy"][method] for scored in models["gold"].values()])
            for method in methods
        ],
        "worker_columns": [MODEL_NAMES[method] for method in rated],
        "worker_rows": [(entry, [entry[method] for method in rated]) for entry in models["workers"]],
        "meanings": [(MODEL_NAMES[method], models["reliability_meaning"][method]) for method in rated],
        "unavailable": list(models["unavailable"].values()),
    }


@login_required
def report(request, slug):
    # here, not at the top: the report loads pandas, scipy and matplotlib (keep web processes lean)
    from annotation.services.analysis.agreement import (
        INTERACTIVE_RESAMPLED_VALUES,
        project_report,
    )
    from annotation.services.analysis.annotator_models import INTERACTIVE_ANSWERS, project_annotator_models

    project = access.project_for(request.user, slug, "manage")
    result = project_report(project, bootstrap=REPORT_BOOTSTRAP, max_resampled_values=INTERACTIVE_RESAMPLED_VALUES)
    # Annotator models apply to nominal labels only: other reports have no such section.
    models = (
        project_annotator_models(project, max_answers=INTERACTIVE_ANSWERS)
        if project.task.agreement_level == "nominal"
        else None
    )
    figures = result["figures"]
    context = {
        "project": project,
        "figures": figures,
        "rows": figure_rows(figures),
        "unavailable": [(UNAVAILABLE_NAMES.get(key, key), reason) for key, reason in figures["unavailable"].items()],
        "plots": result["plots"],
        "tables": result["tables"],
        "simulated": simulation.has_simulated_answers(project),
        "models": models and annotator_model_tables(models),
    }
    return render(request, "annotation/report.html", context)


@login_required
def audit_log(request):
    """The latest audit entries (admins only), optionally of one kind."""
    roles.ensure_role(request.user, roles.ADMIN, "read the audit log")
    action = request.GET.get("action") if request.GET.get("action") in AuditEntry.Action.values else None
    return render(
        request,
        "annotation/audit.html",
        {
            "entries": audit.recent(limit=AUDIT_PAGE_ROWS, action=action),
            "actions": AuditEntry.Action.choices,
            "action": action,
        },
    )
