"""Pages for background model runs: start a prediction, follow its progress live, cancel it."""
import uuid
from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.services import access
from models_backend import runs
from models_backend.models import ModelRun


class PredictForm(forms.Form):
    model_dir = forms.CharField(label="Model folder", help_text="A local checkpoint folder on the server (transformers format).")
    input_file = forms.FileField(label="Pairs", help_text="JSONL or CSV with id, premise, hypothesis (U-SNLI CSV works too).")
    output_format = forms.ChoiceField(choices=[("jsonl", "jsonl"), ("csv", "csv (regressors)"), ("chaosnli", "chaosnli")])
    batch_size = forms.IntegerField(min_value=1, max_value=1024, initial=64)
    queue = forms.ChoiceField(choices=[("default", "default"), ("gpu", "gpu workers")])

    def clean_model_dir(self):
        folder = Path(self.cleaned_data["model_dir"]).expanduser()
        if not (folder / "config.json").is_file():
            raise forms.ValidationError(f"{folder} is not a checkpoint folder (no config.json)")
        return str(folder)


def _visible_runs(user):
    access.ensure_role(user, access.AUTHOR, "run models")
    return access.visible_runs(user, ModelRun.objects.select_related("created_by"))


@login_required
def run_list(request):
    runs_page = Paginator(_visible_runs(request.user), 25).get_page(request.GET.get("page"))
    form = PredictForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        folder = Path(settings.MEDIA_ROOT) / "model_runs" / uuid.uuid4().hex
        folder.mkdir(parents=True)
        upload = form.cleaned_data["input_file"]
        source = folder / Path(upload.name).name
        with open(source, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        extension = "csv" if form.cleaned_data["output_format"] == "csv" else "jsonl" if form.cleaned_data["output_format"] == "jsonl" else "json"
        params = {
            "model_dir": form.cleaned_data["model_dir"],
            "input_path": str(source),
            "output_path": str(folder / f"predictions.{extension}"),
            "output_format": form.cleaned_data["output_format"],
            "batch_size": form.cleaned_data["batch_size"],
        }
        run = runs.start_model_run(ModelRun.Job.PREDICT, params, request.user, queue=form.cleaned_data["queue"])
        messages.success(request, f"Run {run.pk} started.")
        return redirect("models_backend:run_detail", run_id=run.pk)
    return render(request, "models_backend/run_list.html", {"runs": runs_page, "form": form})


def _run(request, run_id) -> ModelRun:
    return access.run_for(request.user, ModelRun.objects.all(), run_id)


@login_required
def run_detail(request, run_id):
    return render(request, "models_backend/run_detail.html", {"run": _run(request, run_id)})


@login_required
def run_status(request, run_id):
    """The progress fragment the detail page polls while the run is queued or running."""
    return render(request, "models_backend/_run_status.html", {"run": _run(request, run_id)})


@login_required
@require_POST
def run_cancel(request, run_id):
    run = runs.cancel(_run(request, run_id))
    messages.info(request, "Cancelling: the run stops at its next step." if not run.finished else "The run had already ended.")
    return redirect("models_backend:run_detail", run_id=run.pk)


@login_required
def run_output(request, run_id):
    run = _run(request, run_id)
    path = Path(run.params.get("output_path", ""))
    if run.status != ModelRun.Status.DONE or not path.is_file():
        raise Http404("this run has no output file")
    return FileResponse(open(path, "rb"), as_attachment=True, filename=path.name)
