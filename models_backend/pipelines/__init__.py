"""Data-generation pipelines built on local models: atomic decomposition and antonym replacement."""
