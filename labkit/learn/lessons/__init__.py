"""Small helpers behind the study notebooks (packet sections 1-5), one module per notebook.

Each function does one thing a notebook shows and returns plain numbers or rows, so the
notebook cell stays a single call and a print. They build on core, bugs and diagnosis.
"""
