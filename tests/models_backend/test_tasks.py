import json
import logging

from conftest import PAIRS, write_pairs_jsonl
from django.test import override_settings

from models_backend.tasks import predict_task

IMMEDIATE = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend", "QUEUES": ["default", "gpu"]}}


@override_settings(TASKS=IMMEDIATE)
def test_predict_task_runs_the_service_and_logs_progress(tiny_nli, tmp_path, caplog):
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    output = tmp_path / "out.jsonl"
    with caplog.at_level(logging.INFO, logger="models_backend.tasks"):
        result = predict_task.enqueue(str(tiny_nli), str(source), str(output), batch_size=2)
    assert result.return_value["rows"] == len(PAIRS)
    assert len(output.read_text().splitlines()) == len(PAIRS)
    assert json.loads(output.read_text().splitlines()[0])["id"] == "p0"
    assert any(f"{len(PAIRS)}/{len(PAIRS)}" in message for message in caplog.messages)
