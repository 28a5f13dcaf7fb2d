"""The answer checks of Exercises A-F, one module per exercise (`a` for Exercise A, ...), and
their free-text rubrics (`rubrics`). Learners import them as ``labkit.check.ex_a`` ...
``labkit.check.ex_f``, short names kept for good (`labkit._moved.SHORT`).
"""
