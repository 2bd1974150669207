"""What the label-variation app adds to the study core, registered once when the app starts
(LabelVariationConfig.ready imports this module): the reason settings every study has, the submit step that
checks and stores the reasons sent with a page, its task types and formats, and its panels on the core's
pages."""

from annotation import tasktypes
from annotation.services import extensions
from annotation.services.answers import SubmissionError
from annotation.services.crowd import participants
from common.schema import Setting
from dataset_io import formats
from label_variation.formats import livenli, taxonomy, varierr
from label_variation.models import ReasonTag
from label_variation.services import reasons, self_judgments, variation
from label_variation.tasktypes import explanation_validation, label_explanation
from label_variation.views.reasons import reasons_context
from label_variation.views.self_check import self_check_due, self_check_links


def _reasons_sent_with(project, worker, items, answers):
    try:  # the disagreement reasons a worker may tick with each answer (reason_taggers "workers")
        tags = reasons.page_tags(project, worker, items, answers)
    except reasons.ReasonError as exc:
        raise SubmissionError(exc.field, exc.message) from None
    return lambda: reasons.save_page_tags(tags)


extensions.add_settings(
    Setting(
        "reason_taxonomy",
        "json",
        reasons.TACL_2022_TAXONOMY,
        "the reasons items may be tagged with: a list of objects with tag, and optional name, key "
        "(one letter or digit) and description (default: the TACL 2022 disagreement categories)",
        check=reasons.check_taxonomy,
        json_schema=reasons.TAXONOMY_SCHEMA,
    ),
    Setting(
        "reason_taggers", "choice", reasons.AUTHORS, "who tags the reasons annotators disagree", choices=reasons.TAGGERS
    ),
)
extensions.add_submit_step(extensions.SubmitStep(check=_reasons_sent_with))

for task_module in (label_explanation, explanation_validation):
    tasktypes.register(task_module.TASK)
for format_module in (varierr, livenli, taxonomy):
    formats.register(format_module.FORMAT)


def _user(page):
    return page["request"].user


def _reasons_section(page):
    return {"section": reasons_context(page["item"], _user(page))}


def _work_reasons(page):
    offered = reasons.work_page_taxonomy(page["project"])
    return {"work_reasons": offered} if offered else None


def _self_check_progress(page):
    progress = variation.study_self_check(page["project"])
    return {"self_check": progress} if progress is not None else None


def _self_check_todo(page):
    project = page["project"]
    if not project.task.explains_labels:
        return None
    # One query for the whole list, kept for the rest of this page's rendering.
    memo = page.render_context
    if "self_check_waiting" not in memo:
        listed = [study.pk for study in page["work_projects"] if study.task.explains_labels]
        memo["self_check_waiting"] = self_judgments.waiting_by_project(_user(page), listed)
    waiting = memo["self_check_waiting"].get(project.pk, 0)
    return {"to_judge": waiting} if waiting else None


def _erase_reason_notes(workers) -> int:
    return ReasonTag.objects.filter(tagger__in=workers).exclude(note="").update(note="")


extensions.add_panel("adjudication_item", "label_variation/_reasons.html", _reasons_section)
extensions.add_panel(
    "report",
    "label_variation/_reasons_report.html",
    lambda page: {"reasons_report": reasons.reasons_report(page["project"])},
)
extensions.add_panel("work_item", "label_variation/_work_reasons.html", _work_reasons)
extensions.add_panel("study_page_validation", "label_variation/_self_check_progress.html", _self_check_progress)
extensions.add_panel("worker_home_study", "label_variation/_self_check_todo.html", _self_check_todo)
extensions.add_panel(
    "worker_study_end",
    "label_variation/_self_check_link.html",
    lambda page: self_check_links(page["project"], _user(page)),
)
extensions.add_follow_up(self_check_due)
extensions.add_report_tables(variation.report_tables)
extensions.add_record_parts(
    lambda item_ids: {item_id: {"reasons": rounds} for item_id, rounds in reasons.export_rounds(item_ids).items()}
)
participants.register_free_text_eraser(_erase_reason_notes)
