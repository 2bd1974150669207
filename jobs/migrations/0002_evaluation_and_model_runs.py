"""Evaluation runs and model runs were stored in two tables of their own; both become jobs."""
from django.db import migrations

STATUS = {"queued": "queued", "running": "running", "done": "done", "failed": "failed", "cancelled": "cancelled"}


def copy_runs(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    for run in apps.get_model("evaluation", "EvaluationRun").objects.all().iterator():
        job = Job.objects.create(
            kind="evaluate", params={"suite": run.suite, "parameters": run.parameters}, inputs=run.inputs,
            status=STATUS[run.status], result=run.results, error=run.error, created_by_id=run.created_by_id,
            project_id=run.project_id, started_at=run.started_at,
            finished_at=run.finished_at,
        )
        Job.objects.filter(pk=job.pk).update(created_at=run.created_at)  # auto_now_add set it to now
    for run in apps.get_model("models_backend", "ModelRun").objects.all().iterator():
        job = Job.objects.create(
            kind=run.job, params=run.params, status=STATUS[run.status], done=run.done, total=run.total,
            cancel_requested=run.cancel_requested, result=run.result, error=run.error,
            created_by_id=run.created_by_id, started_at=run.started_at,
            finished_at=run.finished_at,
        )
        Job.objects.filter(pk=job.pk).update(created_at=run.created_at)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0001_initial"),
        ("evaluation", "0001_initial"),
        ("models_backend", "0001_initial"),
    ]
    operations = [migrations.RunPython(copy_runs, migrations.RunPython.noop)]
