"""A label-explanation study sent to validation, as the self-check tests (service and API) both start from."""

from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import send_to_validation

PREMISE = "A man in a grey suit is reading a newspaper on a crowded train."
HYPOTHESIS = "A man is going to work."


def explained(text: str, premise_spans=()) -> dict:
    return {"explanation": text, "premise_spans": [list(span) for span in premise_spans], "hypothesis_spans": []}


def explain_and_send(project, import_rows, make_user):
    """One pair in `project` (a label_explanation study): "writer" explains e and n, "other" explains e; the
    pairs go to the validation study. Returns (writer, other)."""
    import_rows(project, [{"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    writer, other = make_user("writer", "worker"), make_user("other", "worker")
    answers = {
        writer: {
            "e": explained("Reading a newspaper on a train is what commuters do.", [(11, 20)]),
            "n": explained("Nothing in the sentence says where the train is going."),
        },
        other: {"e": explained("Suits and crowded trains mean a morning commute to work.")},
    }
    for person, labels in answers.items():
        page = claim_page(project, person)
        (claim,) = page.claims.all()
        submit_page(page.pk, person, {str(claim.item_id): {"value": {"labels": labels, "idk": False}}})
    send_to_validation(project)
    project.refresh_from_db()
    return writer, other
