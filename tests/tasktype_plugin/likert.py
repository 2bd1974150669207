"""A Likert entailment rating: how likely is the hypothesis given the premise, on a scale of `points`
points (5 or 7), from "certainly false" to "certainly true". Median aggregation, ordinal agreement."""

from annotation.tasktypes.base import OrdinalTaskType
from common.schema import Setting

NAMES = {
    5: ["Certainly false", "Unlikely", "Can't say", "Likely", "Certainly true"],
    7: ["Certainly false", "Very unlikely", "Unlikely", "Can't say", "Likely", "Very likely", "Certainly true"],
}


class LikertRating(OrdinalTaskType):
    name = "likert_rating"
    label = "Likert entailment rating"
    rated = "ratings"
    has_demo = False
    answer_help = "a rating from 1 to the scale's number of points"
    settings = (
        Setting(
            "points",
            "choice",
            5,
            "points on the rating scale",
            choices=((5, "5 points"), (7, "7 points")),
            worker_visible=True,
            fixed_once_answered=True,
        ),
    )

    def scale(self, options):
        names = NAMES[int(options.get("points") or 5)]
        return dict(enumerate(names, start=1))


TASK = LikertRating()
