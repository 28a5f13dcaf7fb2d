"""Step 6: the decision. The evidence of one seed, each piece gathered once (`evidence`), the
rules H3 -> H2 -> H1 (`rules`) over two seeds that must agree (`seeds`), and the explorer that
fills the record step by step (`explorer`).
"""
