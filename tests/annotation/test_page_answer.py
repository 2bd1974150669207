"""The claim's answer, a page with its items: AssignmentSerializer and PageItemSerializer write their output out
(annotation/serializers.py) where DRF would walk their declared fields, which are the API schema. Each must give
what DRF's own walk over those fields gives, key for key and in the same order: a field declared and not written
out, or written out differently, fails here."""

import json

import pytest
from rest_framework import serializers

from annotation.models import Assignment
from annotation.serializers import AssignmentSerializer, PageItemSerializer
from annotation.services.assignments import claim_page, submit_page

pytestmark = pytest.mark.django_db


def drf_walk(serializer: serializers.Serializer, instance) -> dict:
    """DRF's Serializer.to_representation: every declared field's get_attribute and to_representation."""
    return serializers.Serializer.to_representation(serializer, instance)


def same_output(written: dict, walked: dict) -> None:
    assert list(written) == list(walked)
    assert json.dumps(written) == json.dumps(walked)


@pytest.mark.parametrize("task_type", ["unli_slider", "atom_validity"])
def test_a_claimed_page_and_its_items_answer_as_drf_would(make_project, import_rows, worker, task_type):
    project = make_project(task_type, items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(3)])
    if project.task.per_atom:
        import_rows(project, [{"example_id": str(i), "atoms": [f"atom {i}"]} for i in range(3)], "atoms")

    page = claim_page(project, worker)
    assert len(page.page_items) == 2
    for item in page.page_items:
        same_output(PageItemSerializer().to_representation(item), drf_walk(PageItemSerializer(), item))
    answer = AssignmentSerializer(page).data
    same_output(answer, drf_walk(AssignmentSerializer(), page))
    assert [item["atom"] is None for item in answer["items"]] == [not project.task.per_atom] * 2
    assert answer["submitted_at"] is None

    # Read back after its submit: no items carried, the submit's time and status shown.
    value = project.task.example_answers(project.task.default_options())[0]
    submit_page(page.pk, worker, {str(item.id): {"value": value} for item in page.page_items})
    submitted = Assignment.objects.select_related("project").get(pk=page.pk)
    answer = AssignmentSerializer(submitted).data
    same_output(answer, drf_walk(AssignmentSerializer(), submitted))
    assert answer["status"] == "submitted" and answer["submitted_at"] is not None
    assert [item["id"] for item in answer["items"]] == [item.id for item in page.page_items]
