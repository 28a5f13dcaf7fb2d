"""Diagnosis: `probes` that work on any nn.Module, the `TriageRecord` (the Training
Run Explorer's form), and automatic triage (`evidence`, `rules`, `explorer`, whose
`diagnose()` fills a record), plus Lab 15's mystery setups.

Imports from `core` and `bugs` below it, never from forecast, learn or widgets.
"""
