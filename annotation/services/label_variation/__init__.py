"""The label-variation protocols: label explanations and VariErr's rule, disagreement reasons, authors' self-judgments, linked validation rounds."""
