"""H1 bugs: the optimizer and the loss path (gradients, updates, learning rate, the loss
itself).
"""
