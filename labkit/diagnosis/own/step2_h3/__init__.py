"""Step 2, H3 (instrumentation): is the logged number an honest summary of the raw losses?
(`logger`, `logcount`, `rebuild`).
"""
