"""Generators of challenge data sets derived from existing NLI data (pure functions, seeded)."""
