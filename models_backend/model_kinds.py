"""What a checkpoint is for and the numeric precisions it can run in: plain names, importable without torch,
so that registering the model job kinds (at every start of the app) does not load torch."""

from enum import StrEnum

PRECISIONS = ("auto", "fp32", "bf16-linear", "int8", "fp16", "bf16")


class ModelKind(StrEnum):
    NLI = "nli"
    UNLI = "unli"
    DEFEASIBLE = "defeasible"
    ACCEPTABILITY = "acceptability"
    CAUSAL_LM = "causal_lm"
