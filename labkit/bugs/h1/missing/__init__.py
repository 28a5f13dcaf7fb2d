"""H1 bugs where one piece of the step is missing: the optimizer's parameters, its step, or the
zeroing of gradients.
"""
