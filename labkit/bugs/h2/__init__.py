"""H2 bugs: the data (inputs, labels, masks and shifts) carry no learnable signal, or the wrong
one.
"""
