"""Step 3, H2 (data): do the data carry a signal the model can learn, and is each prediction
scored against the right target? (`data`, `offset`, `entropy`).
"""
