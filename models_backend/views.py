"""The models page: start a prediction over uploaded pairs and list the model jobs. A job's own page is the
job page (jobs.views), as for every background job."""
from pathlib import Path

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render

from annotation.services import access
from jobs.kinds import kinds_of
from jobs.models import Job
from jobs.services import start_job
from models_backend.runs import PREDICT


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


@login_required
def run_list(request):
    access.ensure_role(request.user, access.AUTHOR, "run models")
    jobs = access.visible_runs(request.user, Job.objects.filter(kind__in=kinds_of("models")).select_related("created_by"))
    form = PredictForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        params = {"model_dir": data["model_dir"], "output_format": data["output_format"], "batch_size": data["batch_size"]}
        job = start_job(PREDICT, params, request.user, inputs={"input": data["input_file"]}, queue=data["queue"])
        messages.success(request, f"Job {job.pk} started.")
        return redirect("jobs:detail", job_id=job.pk)
    return render(request, "models_backend/run_list.html",
                  {"runs": Paginator(jobs, 25).get_page(request.GET.get("page")), "form": form})
