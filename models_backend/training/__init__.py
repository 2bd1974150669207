"""Training recipes for local checkpoints."""
