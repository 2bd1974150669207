"""Atom validity: is the candidate atom grammatical, entailed by H and not entailed by P?"""

from annotation.tasktypes.base import AnswerError, Choice, DemoProject, NominalTaskType, parse_label
from annotation.tasktypes.demo_text import atom_example_rows, atom_rows, worked_examples
from common.vocabulary import NLI, UPDATE

CRITERIA = (
    "It is a grammatical sentence.",
    "The hypothesis entails it: it adds nothing the hypothesis does not say.",
    "The premise does not already entail it.",
)
VALIDITY = ["valid", "invalid"]


class AtomValidity(NominalTaskType):
    name = "atom_validity"
    label = "Atom validity"
    per_atom = True
    default_items_per_page = 5
    answer_help = "valid or invalid, with an optional reason"
    atom_reference_field = "validity"
    # The paper's definition of a valid atom is the protocol: an author reads it but cannot rewrite it.
    guidance = (
        "Each item shows a premise, a hypothesis and a **candidate atom**: a short fact taken from the hypothesis. "
        "Mark the atom **valid** only when all three checks hold; otherwise mark it invalid.\n\n"
        + "\n".join(f"{number}. {criterion}" for number, criterion in enumerate(CRITERIA, start=1))
        + "\n\nAn atom that says more than the hypothesis (even something the hypothesis merely suggests) is "
        "invalid."
    )

    def labels(self, options):
        return VALIDITY

    def example_labels(self, options):
        # Atoms of SNLI pairs (an NLI relation) and of delta-NLI examples (the update's type).
        return NLI.labels + UPDATE.labels

    def choices(self, options):
        return [Choice("valid", "Valid", "v"), Choice("invalid", "Invalid", "i")]

    def parse_answer(self, answer, options):
        value = parse_label(answer.get("value", ""), VALIDITY)
        reason = answer.get("reason", "")
        if not isinstance(reason, str) or len(reason) > 2000:
            raise AnswerError("reason", "must be text of at most 2000 characters")
        return {"value": value, "reason": reason}, value

    def gold_reference(self, example, atom, options):
        return atom.validity if atom is not None and atom.validity in VALIDITY else None

    def widget_context(self, options):
        return {**super().widget_context(options), "criteria": CRITERIA, "asks_reason": True}

    def demo(self):
        return DemoProject(
            "demo-atoms",
            "Demo: are these atoms valid?",
            "Check each candidate atom against the three criteria.",
            worked_examples("demo-atoms"),
            [("jsonl", list(atom_example_rows())), ("atoms", list(atom_rows()))],
        )


TASK = AtomValidity()
