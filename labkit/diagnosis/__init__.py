"""Diagnosis: `probes` that work on any nn.Module, the `TriageRecord` (the Training
Run Explorer's form), and automatic triage (`evidence`, `rules`, `explorer`, whose
`diagnose()` fills a record), plus Lab 15's mystery setups. The triage of a learner's
own code: `setup` (the five-method protocol), `replay` (PyTorch's global hooks on the
learner's loop), `own_loops` (plain comparison loops), `own_logger` (H3), `own_data` (H2),
`own_loop` (H1), `own_rules` (the order), `own_intervene` and `own` (the record).

Imports from `core` and `bugs` below it, never from forecast, learn or widgets.
"""
