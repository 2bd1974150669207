import itertools

import pytest

from annotation.tasktypes import TASK_TYPES, AnswerError, get_task_type
from annotation.tasktypes.unli_slider import position_to_probability


@pytest.mark.parametrize(
    "position, expected",
    [(0, 0.0), (2500, 0.000552), (4500, 0.182425), (5000, 0.5), (6000, 0.607838), (9000, 0.911096), (10000, 1.0)],
)
def test_slider_mapping_matches_the_usnli_template(position, expected):
    assert position_to_probability(position) == pytest.approx(expected, abs=5e-7)


def test_slider_mapping_is_monotonic():
    values = [position_to_probability(x) for x in range(0, 10001, 7)]
    assert all(a < b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize(
    "task, answer, field",
    [
        ("unli_slider", {}, "value"),
        ("unli_slider", {"value": 10001}, "value"),
        ("unli_slider", {"value": -1}, "value"),
        ("unli_slider", {"value": 50.5}, "value"),
        ("unli_slider", {"value": "0.7"}, "value"),
        ("unli_slider", {"value": True}, "value"),
        ("defeasible_atom", {"value": 3}, "value"),
        ("defeasible_atom", {"value": "strong"}, "value"),
        ("atom_validity", {"value": "maybe"}, "value"),
        ("atom_validity", {"value": "valid", "reason": ["x"]}, "reason"),
        ("nli_label", {"value": "x"}, "value"),
    ],
)
def test_bad_answers_name_the_field(task, answer, field):
    task_type = get_task_type(task)
    with pytest.raises(AnswerError) as error:
        task_type.parse_answer(answer, task_type.default_options())
    assert error.value.field == field


def test_slider_keeps_the_raw_position_and_computes_the_probability_itself():
    task = get_task_type("unli_slider")
    raw, value = task.parse_answer({"value": "6000", "probability": 0.99}, task.default_options())
    assert raw == {"position": 6000}
    assert value == pytest.approx(0.607838, abs=5e-7)


def test_nli_label_accepts_long_names():
    task = get_task_type("nli_label")
    assert task.parse_answer({"value": "Entailment"}, task.default_options()) == ({"value": "e"}, "e")


@pytest.mark.parametrize(
    "positions, more",
    [([1000, 3000], False), ([1000, 3001], True), ([9000, 6999], True), ([5000, 5000], False)],
)
def test_slider_disagreement_rule(positions, more):
    task = get_task_type("unli_slider")
    raws = [{"position": p} for p in positions]
    assert task.disagree(raws, [position_to_probability(p) for p in positions], task.default_options()) is more


@pytest.mark.parametrize(
    "values, more",
    [([1, 2], False), ([0, 2], True), ([-1, 1], True), ([-1, 0], False), ([2, 2], False), ([-2, 0], True)],
)
def test_defeasible_disagreement_rule(values, more):
    task = get_task_type("defeasible_atom")
    assert task.disagree([], values, {}) is more


def test_aggregates():
    slider = get_task_type("unli_slider")
    assert slider.aggregate([0.1, 0.9, 0.3], {}).value == 0.3
    assert slider.aggregate([0.2, 0.4], {}).value == pytest.approx(0.3)
    defeasible = get_task_type("defeasible_atom")
    assert defeasible.aggregate([1, 2, 2], {}).value == 2
    assert defeasible.aggregate([1, 2], {}).tied
    validity = get_task_type("atom_validity")
    assert validity.aggregate(["valid", "invalid", "valid"], {}).value == "valid"
    assert validity.aggregate(["valid", "invalid"], {}).tied
    nli = get_task_type("nli_label")
    assert nli.aggregate(["e", "n", "n"], nli.default_options()).value == "n"


def test_every_task_type_has_a_template_and_level():
    from django.template.loader import get_template

    for task in TASK_TYPES.values():
        get_template(task.template)
        assert task.agreement_level in ("nominal", "ordinal", "interval") or (
            task.agreement_level is None and task.agreement_unavailable
        )
