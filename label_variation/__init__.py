"""The label-variation protocols as a feature app beside the study core: label explanations and VariErr's
error rule, disagreement reasons with their taxonomy and tagging rounds, authors' self-judgments, and the
variation report with its formats (VariErr, LiveNLI, the TACL 2022 taxonomy release). The core imports none of
it: `LabelVariationConfig.ready` registers what it adds (docs/architecture.md)."""
