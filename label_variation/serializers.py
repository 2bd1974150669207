from rest_framework import serializers

from common.api_fields import Text
from label_variation.services.self_judgments import MAX_PAGE


class SelfJudgmentSerializer(serializers.Serializer):
    pair = serializers.IntegerField(
        min_value=1, max_value=2**63 - 1, help_text="the pair's id, as GET own-explanations/ lists it"
    )
    makes_sense = serializers.BooleanField(
        help_text='whether your explanation still makes sense for its label ("yes" / "no" are read too)'
    )


class SelfJudgmentsRequestSerializer(serializers.Serializer):
    """A page of an explanation author's judgments of their own pairs (the body of POST own-explanations/)."""

    # The bounds record_self_judgments checks, stated in the schema.
    judgments = serializers.ListField(
        child=SelfJudgmentSerializer(),
        min_length=1,
        max_length=MAX_PAGE,
        help_text=f"one judgment per pair, at most {MAX_PAGE} at once",
    )


class ReasonTagRequestSerializer(serializers.Serializer):
    reasons = serializers.ListField(child=Text(), help_text="tags of the study's taxonomy (setting reason_taxonomy)")
    round = serializers.IntegerField(required=False, default=1, help_text="1 or 2")
    note = Text(required=False, allow_blank=True, default="", trim_whitespace=False)
    reconcile = serializers.BooleanField(
        required=False, default=False, help_text="write the round's reconciliation (its two taggers disagree)"
    )
