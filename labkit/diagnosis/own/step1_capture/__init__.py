"""Step 1 of the setup triage: check the learner's five methods and call them under the time
budget (`setup`, `bounded`, `budget`, `skips`), read the shapes of their batches (`shapes`,
`rows`, `inner`, `carry`), replay their own loop (`replay`, `manual`) and run labkit's plain
comparison loops on their model and data (`loops`).
"""
