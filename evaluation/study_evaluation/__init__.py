"""Evaluate a study in one step: its settled items, one or more checkpoints, every figure the papers report for
the study's protocol (docs/models.md, "Evaluating a study"). One implementation for the page, the API and
`manage.py evaluate_study`:

1. `reference.write_reference`: the study's export (the one users download, with the study's own final labels)
   cut to the items whose reference value is settled, each counted by where its value comes from (adjudicated,
   collected, imported); "collected answers only" drops the imported ones. Checked before a job is stored.
2. `scoring.model_inputs`: the pairs each checkpoint reads: (premise, hypothesis) pairs; for atom studies also
   (premise, atom) and (hypothesis, atom); for defeasible studies (premise + hypothesis, update) and
   (premise + atom, update), delta-NLI's input shape (the update is the second segment).
3. Batched inference with models_backend.runner (the prediction job's code), one checkpoint at a time.
4. `scoring.write_suite_files` writes what a person would have made by hand for the evaluation suite (ChaosNLI
   predictions, the nli-atoms or defeasible JSON Lines, U-SNLI predictions), and the suites of
   evaluation.suites score them: the figures are the suites' own.
5. `scoring.item_scorer`: the protocol's headline figures as a function of (model, resampled item indices),
   which metrics.model_comparison resamples to compare several models on the same items.

`protocols` (what each study's task type is scored with, the settings) loads no heavy library: the pages and
the API import it at start; `reference`, `scoring` and `jobs` are imported when an evaluation is asked for.
"""
