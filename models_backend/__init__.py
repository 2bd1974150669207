"""Local model backend: checkpoint registry, batched inference, LM choice scoring, UNLI training,
atom and antonym pipelines, and their background tasks. See docs/models.md."""
