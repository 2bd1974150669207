"""Three-way NLI labels (entailment / neutral / contradiction), many annotators per item.

Projects importing alphaNLI from ChaosNLI use the label set ["1", "2"] (which hypothesis is likelier).
"""
from annotation.tasktypes.base import AnswerError, NominalTaskType

NLI_LABELS = ["e", "n", "c"]
LABEL_NAMES = {"e": "Entailment", "n": "Neutral", "c": "Contradiction", "1": "Hypothesis 1", "2": "Hypothesis 2"}
LONG_FORMS = {"entailment": "e", "neutral": "n", "contradiction": "c"}


def normalise_label(value) -> str:
    text = str(value).strip().lower()
    return LONG_FORMS.get(text, text)


class NLILabel(NominalTaskType):
    name = "nli_label"
    label = "Three-way NLI label"
    default_items_per_page = 5

    def default_options(self):
        return {"labels": list(NLI_LABELS)}

    def labels(self, options):
        return options.get("labels") or list(NLI_LABELS)

    def parse_answer(self, answer, options):
        value = normalise_label(answer.get("value", ""))
        allowed = self.labels(options)
        if value not in allowed:
            raise AnswerError("value", f"choose one of {', '.join(allowed)}")
        return {"value": value}, value


TASK = NLILabel()
