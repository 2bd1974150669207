"""A study's data in and out: imports, exports and the records they share, provenance, instrument versions, validation, the dataset bundle, and their background jobs."""
