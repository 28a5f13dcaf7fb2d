"""Diagnosis, by family:
- `diagnose` holds `labkit.diagnose()`, the one entry of both triages;
- `zoo/`: the triage of labkit's own loop with a bug of the zoo (`setup`, `evidence`,
  `rules`, `explorer`);
- `own/`: the triage of a learner's own code, its protocol in order (see its package);
- `record/`: the `TriageRecord` (the Training Run Explorer's form, Lab 15's record) and
  its strict rules;
- on the floor both triages stand on: `probes` (any nn.Module), `finding` (what a rule
  concludes), `cache` (evidence kept once per seed), `stepwise` (one step at a time);
- `lab15`: Lab 15's mystery setups.

`zoo/` and `own/` never import each other. Imports from `core` and `bugs` below it,
never from forecast, learn or widgets.
"""
