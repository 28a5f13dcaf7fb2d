"""The `TriageRecord` (`triage`): the Training Run Explorer's form, which Lab 15 fills,
with its sealed `Prediction` (`prediction`), the strict rules and rows (`strict`,
`strict_rows`), its text (`triage_text`) and its place in the learner store (`kept`)."""
