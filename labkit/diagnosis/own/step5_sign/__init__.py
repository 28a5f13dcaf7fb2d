"""Step 5: test a finding by a one-variable intervention and sign it (`intervene`, `refloss`,
`sign`, `onechange`), then say what to change and what was acquitted (`prescribe`, `acquit`).
"""
