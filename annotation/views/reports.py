"""The project agreement report page (authors of the project and admins only) and the audit log (admins)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.models import AuditEntry
from annotation.services import access, audit, simulation
from annotation.services.analysis import report_job
from annotation.services.analysis.report_tables import report_tables
from core import roles

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


# Below this many items a figure is shown with a warning (docs/metrics.md, "Sample sizes on the report").
MIN_ITEMS = 30
# Krippendorff's (2004) levels: data reliable from 0.800, tentative conclusions from 0.667.
ALPHA_RELIABLE, ALPHA_TENTATIVE = 0.800, 0.667
CORRELATION_READING = "1: pairs of workers order the items alike; 0: no relation; below 0: opposite orders"


def figure_rows(figures: dict) -> list[dict]:
    """The figures as table rows: name, value, interval (or None), what it was computed on, its sample size
    (`n`, `unit`), a one-line reading and a warning (None, or why the figure is fragile)."""
    pairable = figures["n_items_pairable"]
    rows = []
    if figures["krippendorff_alpha"] is not None:
        rows.append(
            _row(
                f"Krippendorff's alpha ({figures['level']})",
                figures["krippendorff_alpha"],
                figures["krippendorff_alpha_ci"],
                "all annotations, imported votes included",
                pairable,
                "items with two or more annotations",
                _alpha_reading(figures["krippendorff_alpha"], figures["krippendorff_alpha_ci"]),
            )
        )
    pairwise = figures["pairwise"]
    if pairwise is not None:
        on_pairs = f"mean over {pairwise['pairs']} pairs of workers, each on the items both annotated"
        reading = (
            "1: pairs of workers agree on every item; 0: what chance gives"
            if pairwise["statistic"] == "cohen_kappa"
            else CORRELATION_READING
        )
        rows.append(
            _row(
                PAIRWISE_NAMES[pairwise["statistic"]],
                pairwise["value"],
                pairwise["ci"],
                on_pairs,
                pairable,
                "items with two or more annotations",
                reading,
            )
        )
        if pairwise.get("spearman") is not None:
            rows.append(
                _row(
                    "Spearman rho",
                    pairwise["spearman"],
                    None,
                    on_pairs,
                    pairable,
                    "items with two or more annotations",
                    CORRELATION_READING,
                )
            )
    baseline = figures["human_baseline"]
    if baseline is not None:
        held_out = f"one annotation per item against the {baseline['aggregate']} of the others"
        readings = {
            "pearson": "how closely one person follows the others: the human ceiling a model's r is compared with",
            "spearman": "the same on ranks: the human ceiling a model's rho is compared with",
            "mse": "mean squared distance of one person from the others (0: identical)",
        }
        for key, name in (("pearson", "Pearson r"), ("spearman", "Spearman rho"), ("mse", "MSE")):
            if baseline[key] is not None:
                rows.append(
                    _row(
                        f"Human baseline: {name}",
                        baseline[key],
                        None,
                        held_out,
                        baseline["items"],
                        "items",
                        readings[key],
                    )
                )
    if figures["split_half_jsd"] is not None:
        rows.append(
            _row(
                "Split-half JSD",
                figures["split_half_jsd"],
                None,
                "JS distance between two random halves of each item's votes",
                pairable,
                "items with two or more annotations",
                "0: the two halves give each item the same label distribution; larger: less stable distributions",
            )
        )
    return rows


def _row(name, value, ci, note, n, unit, reading) -> dict:
    warning = (
        f"Only {n} {unit}: below {MIN_ITEMS} one item moves the figure a lot and the interval is wide; "
        "read it as a rough indication."
        if n < MIN_ITEMS
        else None
    )
    return {
        "name": name,
        "value": value,
        "ci": ci,
        "note": note,
        "n": n,
        "unit": unit,
        "reading": reading,
        "warning": warning,
    }


def _alpha_reading(alpha: float, ci: list | None) -> str:
    if alpha >= ALPHA_RELIABLE:
        level = f"at or above {ALPHA_RELIABLE:.3f}, where Krippendorff counts data as reliable"
    elif alpha >= ALPHA_TENTATIVE:
        level = f"between {ALPHA_TENTATIVE:.3f} and {ALPHA_RELIABLE:.3f}: tentative conclusions only (Krippendorff)"
    else:
        level = f"below {ALPHA_TENTATIVE:.3f}, under Krippendorff's lowest level for tentative conclusions"
    chance = "; its interval reaches 0, what chance agreement gives" if ci and ci[0] is not None and ci[0] <= 0 else ""
    return f"1: perfect agreement, 0: chance; {level}{chance}"


MODEL_NAMES = {
    "majority_vote": "Majority vote",
    "wawa": "Wawa",
    "dawid_skene": "Dawid-Skene",
    "mace": "MACE",
    "glad": "GLAD",
}


def annotator_model_tables(models: dict) -> dict:
    """The annotator models' result as the report's tables: accuracy on gold per method, reliability per
    worker, what could not be computed, and warnings where the samples are small."""
    methods = models["methods"]
    rated = [method for method in methods if method in models["reliability_meaning"]]
    warnings = [
        f"Only {scored['items']} {kind.replace('_', ' ')} items: below {MIN_ITEMS}, one item moves the accuracy "
        f"by more than {1 / MIN_ITEMS:.0%}."
        for kind, scored in models["gold"].items()
        if scored["items"] < MIN_ITEMS
    ]
    if 0 < models["n_items"] < MIN_ITEMS:
        warnings.append(
            f"Only {models['n_items']} items: below {MIN_ITEMS}, the reliabilities rest on a handful of answers each."
        )
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
        "warnings": warnings,
    }


@login_required
def report(request, slug):
    """The report: the heavy figures from the newest report job as they stand, the tables read now. Once
    loaded, the page asks report_status to check them against the answers (a first view checks at once)."""
    project = access.project_for(request.user, slug, "manage")
    cached = report_job.latest(project)
    if cached.done is None and cached.pending is None and cached.failed is None:
        cached = report_job.check(project, request.user)  # never computed: start now
    context = {
        "project": project,
        "cached": cached,
        "tables": report_tables(project),
        "simulated": simulation.has_simulated_answers(project),
    }
    result = cached.result
    if result is not None:
        figures = result["figures"]
        context |= {
            "figures": figures,
            "rows": figure_rows(figures),
            "unavailable": [
                (UNAVAILABLE_NAMES.get(key, key), reason) for key, reason in figures["unavailable"].items()
            ],
            "plots": result["plots"],
            "models": result["models"] and annotator_model_tables(result["models"]),
        }
    return render(request, "annotation/report.html", context)


@login_required
def report_status(request, slug):
    """Where the report's figures stand, as the page shows them under their date: with ?check=1 checked
    against the answers (a computation started when they changed), else as the jobs stand (the poll while
    one runs). When newer figures than the page's (?shown=job id) are ready, htmx reloads the page."""
    project = access.project_for(request.user, slug, "manage")
    cached = report_job.check(project, request.user) if request.GET.get("check") else report_job.latest(project)
    shown = request.GET.get("shown", "")
    newer = cached.done is not None and str(cached.done.pk) != shown
    response = render(
        request,
        "annotation/_report_status.html",
        {"project": project, "cached": cached, "shown": shown, "newer": newer},
    )
    if newer and request.htmx:
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_POST
def report_refresh(request, slug):
    """Compute the report's figures again (after a change its version does not see: gold references, settings)."""
    project = access.project_for(request.user, slug, "manage")
    report_job.refresh(project, request.user)
    return redirect("project_report", slug=project.slug)


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
