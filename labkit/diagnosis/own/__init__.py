"""The triage of a learner's own code, in the order of its protocol:
- `setup`: check the five methods, and call them;
- `replay`: PyTorch's global hooks on the learner's own loop;
- `logger` (H3), `data` (H2), `targets` and `losspath` (H1, the loss), `loops` (plain
  comparison loops), `flow` (H1: gradients and updates in the learner's loop),
  `settings` (H1: the optimizer's settings), `floor` (H1: a loss floor above 0);
- `intervene`: the one-variable intervention that tests a finding;
- `rules`: the order that decides;
- `evidence` (one seed, each piece once), `explorer` (the steps that fill the record)
  and `budget` (the time `train()` may take).
"""
