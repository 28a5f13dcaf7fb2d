"""The run: settings (`config`), toy data and models, the seamed reference loop
(`seams`, `train`), the per-step recorder, the `Run` table it fills, and `plots`
of a Run's raw per-step points.

Imports only `labkit.errors` and `labkit.store` from outside this folder.
"""
