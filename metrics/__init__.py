"""Evaluation metrics as pure functions over numpy arrays and pandas objects (no ORM, no file access)."""
