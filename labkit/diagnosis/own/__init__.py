"""The triage of a learner's own code (`labkit.diagnose(setup)`), one package per step of
its protocol, in the order it runs:

- `step1_capture`: check the five methods of the setup and call them under the time budget;
  replay the learner's own loop through PyTorch's global hooks; run labkit's plain
  comparison loops on the same model, data and loss;
- `step2_h3`: instrumentation (H3), is the logged number an honest summary of the raw losses;
- `step3_h2`: data (H2), do the data carry a signal, is each prediction scored against the
  right target;
- `step4_h1`: optimizer and loss (H1), gradients and updates, the optimizer's settings, the
  loss path and its floor;
- `step5_sign`: the one-variable intervention that tests a finding, its signature, the
  prescription and the acquittals;
- `step6_decide`: the evidence of one seed, the rules H3 -> H2 -> H1 over two seeds, and the
  explorer that fills the record step by step.

Beside the steps, two modules every step uses: `margins` (each comparison against its
threshold, and how close it came) and `baseline` (does the learner's own run fail by its own
test). A module imports from its own step or an earlier one; the four exceptions, where a step
borrows a later step's piece, are listed and checked in tests/diagnosis/own/test_own_layout.py.
"""
