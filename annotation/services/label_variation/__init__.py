"""The label-variation protocols: label explanations and VariErr's rule, disagreement reasons, authors'
self-judgments, linked validation rounds.

Importing this package (AnnotationConfig.ready does) registers what it adds to the study core: the reason
settings every study has, and the submit step that checks and stores the reasons sent with a page and sends
a written page to its validation study."""

from annotation.services import extensions
from annotation.services.answers import SubmissionError
from annotation.services.label_variation import linking, reasons
from common.schema import Setting


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
    ),
    Setting(
        "reason_taggers", "choice", reasons.AUTHORS, "who tags the reasons annotators disagree", choices=reasons.TAGGERS
    ),
)
extensions.add_submit_step(extensions.SubmitStep(check=_reasons_sent_with, after=linking.after_submit))
