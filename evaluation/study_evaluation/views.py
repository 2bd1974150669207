"""The pages of a study's evaluation: the form that starts one (a study, its checkpoints, its settings), the
result on the job's page (the reference's sources, each model's figures, the human baseline, the models
compared with their downloads and plots), and the comparison's downloads. The rules live in
evaluation.study_evaluation; these pages only ask and show."""

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from annotation.services import access
from core import roles
from evaluation.study_evaluation.protocols import EVALUATE_STUDY, MIN_ITEMS, SETTINGS, headline_rows, protocol_of
from jobs.models import Job
from jobs.services import JobError
from models_backend import catalog
from models_backend.model_kinds import ModelKind

# Settings that only one protocol reads.
ONLY_FOR = {"alt_test_min_items": "chaos", "weighted": "defeasible"}
DOWNLOADS = {"csv": ("text/csv", "to_csv"), "md": ("text/markdown", "to_markdown"), "tex": ("text/x-tex", "to_latex")}


class StudyEvaluationForm(forms.Form):
    def __init__(self, project, user, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.protocol = protocol_of(project)
        self.fields["models"] = forms.MultipleChoiceField(
            choices=catalog.choices(user, self.protocol.model_kinds),
            widget=forms.CheckboxSelectMultiple,
            label="Models",
            help_text=f"{' or '.join(self.protocol.model_kinds)} checkpoints; two or more are compared on the "
            "same resampled items.",
        )
        self.fields["collected_only"] = forms.BooleanField(
            required=False,
            label="Collected answers only",
            help_text="leave out items whose reference value was imported with the data",
        )
        if self.protocol.suite == "unli":
            self.fields["baseline"] = forms.ChoiceField(
                required=False,
                label="Hypothesis-only baseline",
                choices=[("", "—"), *catalog.choices(user, self.protocol.model_kinds)],
                help_text="a UNLI checkpoint run on the hypotheses alone (the U-SNLI paper's baseline); its "
                "figures get a row of their own",
            )
        if self.protocol.suite == "defeasible":
            self.fields["bucket_nli"] = forms.ChoiceField(
                required=False,
                label="Buckets: NLI model",
                choices=[("", "—"), *catalog.choices(user, (ModelKind.NLI.value,))],
                help_text="groups atoms that entail each other both ways; left empty, atoms of the same text share "
                "a bucket",
            )
            self.fields["bucket_embedder"] = forms.ChoiceField(
                required=False,
                label="Buckets: sentence encoder",
                choices=[("", "—"), *catalog.choices(user, (catalog.ENCODER,))],
                help_text="cosine >= 0.75 between atoms; left empty: the packaged MiniLM",
            )
        self.setting_names = [
            setting.name
            for setting in SETTINGS
            if ONLY_FOR.get(setting.name, self.protocol.suite) == self.protocol.suite
        ]
        self.fields.update(
            {name: field for name, field in SETTINGS.form_fields().items() if name in self.setting_names}
        )
        self.fields["queue"] = forms.ChoiceField(
            required=False,
            choices=[("", "gpu where a GPU worker listens, else default"), ("default", "default"), ("gpu", "gpu")],
            help_text="the models run as one job on this queue",
        )
        for name, field in self.fields.items():  # the help under each field is read out with it
            if field.help_text:
                field.widget.attrs["aria-describedby"] = f"id_{name}-help"

    def settings(self) -> dict:
        return {name: self.cleaned_data.get(name) for name in self.setting_names}


@login_required
def study_evaluate(request, slug):
    """Evaluate a study with one or more checkpoints: the form, then the job's page."""
    roles.ensure_role(request.user, roles.AUTHOR, "run models")
    project = access.project_for(request.user, slug, "manage")
    try:
        protocol_of(project)
    except JobError as error:
        raise Http404(str(error)) from None
    # ?model=<key> (the checkpoints page's "Evaluate on the study") ticks that checkpoint.
    form = StudyEvaluationForm(
        project, request.user, request.POST or None, initial={"models": request.GET.getlist("model")}
    )
    if request.method == "POST" and form.is_valid():
        from evaluation.study_evaluation.jobs import start_study_evaluation

        data = form.cleaned_data
        try:
            job = start_study_evaluation(
                project,
                request.user,
                data["models"],
                form.settings(),
                collected_only=data["collected_only"],
                bucket_nli=data.get("bucket_nli") or None,
                bucket_embedder=data.get("bucket_embedder") or None,
                baseline=data.get("baseline") or None,
                queue=data["queue"] or None,
            )
        except JobError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Job {job.pk} started: {job.title} on study {project.slug}.")
            return redirect("jobs:detail", job_id=job.pk)
    return render(
        request,
        "evaluation/study_evaluate.html",
        {"project": project, "form": form, "protocol": form.protocol, "evaluations": study_evaluations(project)},
        status=400 if form.errors else 200,
    )


def study_evaluations(project):
    return Job.objects.filter(kind=EVALUATE_STUDY, project=project).order_by("-created_at")


def _comparison(job):
    from metrics.model_comparison import ModelComparison

    stored = (job.result or {}).get("comparison")
    return ModelComparison.from_dict(stored) if stored else None


@login_required
def comparison_download(request, job_id, fmt):
    """The comparison table of a finished study evaluation as CSV, Markdown or LaTeX."""
    roles.ensure_role(request.user, roles.AUTHOR, "run models")
    job = roles.run_for(request.user, Job.objects.filter(kind=EVALUATE_STUDY), job_id)
    comparison = _comparison(job) if job.status == Job.Status.DONE else None
    if comparison is None or fmt not in DOWNLOADS:
        raise Http404("this job has no model comparison in that format")
    content_type, method = DOWNLOADS[fmt]
    response = HttpResponse(getattr(comparison, method)(), content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="job-{job.pk}-comparison.{fmt}"'
    return response


def present(job) -> dict:
    """A finished study evaluation on its job page."""
    from evaluation.plots import model_comparison_svg
    from evaluation.study_evaluation.as_annotator import as_annotator_rows
    from evaluation.tables import show, split_result, table_cells
    from jobs.views import safe_svg

    result = job.result
    reference = result["reference"]
    headline = headline_rows(result)
    columns = list(headline[0]) if headline else []
    models = []
    for name, figures in result["models"].items():
        scalars, tables = split_result(figures)
        models.append(
            {
                "name": name,
                "scalars": [(key, show(value)) for key, value in scalars],
                "tables": [(key, *table_cells(rows)) for key, rows in tables],
            }
        )
    context: dict[str, Any] = {
        "scalars": [
            ("protocol", result["study_protocol"]),
            ("reference items", reference["items"]),
            *([("reference atoms", reference["atoms"])] if "atoms" in reference else []),
            *[(f"reference values {source}", n) for source, n in reference["sources"].items()],
            ("collected answers only", "yes" if reference["collected_only"] else "no"),
        ],
        "panel": "evaluation/_study_evaluation_result.html",
        "evaluation": {
            "warnings": reference["warnings"],
            "minimum": MIN_ITEMS,
            "columns": columns,
            "headline": [
                [show(row[column]) if column != "model" else row[column] for column in columns] for row in headline
            ],
            "human": [(key, show(value)) for key, value in (result.get("human_baseline") or {}).items()],
            "models": models,
        },
    }
    context["evaluation"]["as_annotator"] = as_annotator_rows(result)
    comparison = result.get("comparison")
    if comparison:
        rows = comparison["rows"]
        context["evaluation"]["comparison"] = {
            "columns": ["metric", "model", "estimate", "interval", "difference to best", "its interval", "p"],
            "rows": [
                [
                    row["metric"],
                    row["model"] + (" (best)" if row["best"] else ""),
                    show(row["estimate"]),
                    f"[{show(row['low'])}, {show(row['high'])}]",
                    show(row["difference"]),
                    f"[{show(row['difference_low'])}, {show(row['difference_high'])}]",
                    show(row["p_value"]),
                ]
                for row in rows
            ],
            "plots": [(metric, safe_svg(model_comparison_svg(comparison, metric))) for metric in comparison["metrics"]],
            "downloads": [(fmt, reverse("evaluation:comparison_download", args=[job.pk, fmt])) for fmt in DOWNLOADS],
        }
    return context


def study_page_panel(context) -> dict | None:
    """The study page's link to its evaluations, for an author of a study whose protocol has one."""
    project, user = context["project"], context["user"]
    if not roles.has_role(user, roles.AUTHOR):
        return None
    try:
        protocol_of(project)
    except JobError:
        return None
    return {"evaluations": study_evaluations(project)[:10]}
