"""The learner's side of a run: forecasts still open in this kernel, which hold every run until
they are sealed (`pending`), and whether a sentence the learner wrote says anything (`prose`)."""
