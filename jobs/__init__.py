"""One jobs module for every background run: evaluations, predictions, training, atom and antonym pipelines,
large imports and exports. One stored-run model, atomic claiming by task workers, progress, cancel, and
failure with a message the owner can read."""
