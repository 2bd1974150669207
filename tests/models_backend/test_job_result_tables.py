"""A model job's result on its page as tables under the metric names of docs/metrics.md, not a dump of
Python dicts (issue 54, item 5)."""

import pytest

from jobs.models import Job

pytestmark = pytest.mark.django_db


def test_a_model_jobs_result_reads_as_tables(client, author):
    result = {
        "accuracy": 0.812345,
        "n": 50,
        "without_gold": 2,
        "model_kind": "nli",
        "output": "predictions.csv",
        "soft_labels": {"tvd": 0.1234567, "entropy_correlation": {"pearson": None}},
        "bins": [{"bin": 1, "accuracy": 0.5}, {"bin": 2, "accuracy": 0.75, "items": 3}],
    }
    job = Job.objects.create(kind="evaluate_model", status=Job.Status.DONE, result=result, created_by=author)
    client.force_login(author)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    rows = page.split('id="job-result"')[1].split("</table>")[0]
    assert "<code>accuracy</code></th><td>0.8123</td>" in rows and "<code>n</code></th><td>50</td>" in rows
    assert "<code>soft_labels.tvd</code></th><td>0.1235</td>" in rows
    assert "<code>soft_labels.entropy_correlation.pearson</code></th><td>-</td>" in rows
    # A list of records is a table of its own, its columns the union of the records' keys.
    assert "<h3>bins</h3>" in page and "<th>items</th>" in page and "<td>0.7500</td>" in page
    assert "{&#x27;" not in page and "soft_labels</th>" not in page  # no dict printed whole


def test_a_jobs_settings_name_no_path_of_the_host(client, author, settings):
    scratch = f"{settings.SCRATCH_DIR}/jobs/7/models/nli-base"
    job = Job.objects.create(
        kind="predict", status=Job.Status.DONE, params={"model_dir": scratch, "batch": 8}, result={}, created_by=author
    )
    client.force_login(author)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "<code>nli-base</code>" in page and str(settings.SCRATCH_DIR) not in page
