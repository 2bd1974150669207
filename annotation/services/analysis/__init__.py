"""What a study's answers say: agreement, annotator models, adjudication."""
