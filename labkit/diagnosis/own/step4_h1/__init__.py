"""Step 4, H1 (optimizer and loss): gradients and updates in the learner's loop (`flow`,
`norms`, `frozen`), the optimizer's settings (`settings`, `lowlr`, `unsettled`) and the loss
path (`losspath`, `targets`, `lossrange`, `padding`, `floor`).
"""
