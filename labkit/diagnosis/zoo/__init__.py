"""The zoo's triage: labkit's reference loop with one bug of the zoo (`setup`), the
evidence of one seed (`evidence`), the rules H3 -> H2 -> H1 that read it (`rules`), and
the steps of the Training Run Explorer that fill a `TriageRecord` (`explorer`)."""
