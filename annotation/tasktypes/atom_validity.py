"""Atom validity: is the candidate atom grammatical, entailed by H and not entailed by P?"""
from annotation.tasktypes.base import AnswerError, NominalTaskType

CRITERIA = (
    "It is a grammatical sentence.",
    "The hypothesis entails it: it adds nothing the hypothesis does not say.",
    "The premise does not already entail it.",
)


class AtomValidity(NominalTaskType):
    name = "atom_validity"
    label = "Atom validity"
    per_atom = True
    default_items_per_page = 5

    def labels(self, options):
        return ["valid", "invalid"]

    def parse_answer(self, answer, options):
        value = str(answer.get("value", "")).strip().lower()
        if value not in ("valid", "invalid"):
            raise AnswerError("value", "choose valid or invalid")
        reason = answer.get("reason", "")
        if not isinstance(reason, str) or len(reason) > 2000:
            raise AnswerError("reason", "must be text of at most 2000 characters")
        return {"value": value, "reason": reason}, value


TASK = AtomValidity()
