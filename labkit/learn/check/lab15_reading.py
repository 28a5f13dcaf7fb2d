"""Lab 15's mechanism line, read for what it reverses as well as for what it names.

`labkit.diagnosis.lab15.mechanism_terms` counts the groups of key terms a mechanism line
names, as salted hashes, so that no mystery's answer can be read in the source. A line can
name every group and still say the opposite ("the labels are not shuffled", "the scheduler
increases the lr", "the gradients underflow"). `reverses` looks each word, and each run of two
and three words, of the line up in `_REVERSED`, hashed the same way: phrases that reverse or
deny the variant's mechanism. A learner reads no phrase here; a test reads them from
`tests/data/free_text/lab15_*.txt`.
"""

from __future__ import annotations

import re

from ...diagnosis.lab15 import _digest, _variant  # the key terms' own salt and variants

_REVERSED = {  # variant: _digest(variant, phrase) of phrases that reverse or deny its mechanism
    "A1": frozenset(
        (
            "25bdcd4500d51ab3 4b320b31049a3c80 9ad9779a66ac5171 b5852b1f1f101f2f "
            "bcc344f4d699a17a ef67b00a71680ec2"
        ).split()
    ),
    "A2": frozenset(
        (
            "3a2fc3fd8323d81a 4d749e80b813d05f 59bcee8e193ee608 9182f2a4f7b4db56 "
            "a06d367a5acf09e6 bf1c82a66b88fc2d"
        ).split()
    ),
    "B1": frozenset(
        (
            "130c3b2fb470f446 3b38022a1cf66940 8f9283036dc2d0f6 a60ac14f217985cf "
            "c7eb8e38c09fe371 d30777833b36a4ec d501f956e14dba25"
        ).split()
    ),
    "B2": frozenset(
        ("1e2770260aca7f16 8b4cc9ef9bb55a78 8fcc5de93e1578b6 9ec680e40e35fc6d").split()
    ),
    "C1": frozenset(
        (
            "134867fb947a62d7 192aba7b536e96d1 2198958f77001b7e 69611f9abcafe948 "
            "8b8f3a00d5135600 dd91c778649bac3c f83d77373d47ce27"
        ).split()
    ),
    "C2": frozenset(
        (
            "58f7feef850db767 9ca8d50e661c8055 ac2487bfcb593531 ac63d66bbb653f9a "
            "c25164f0272ce90b c870dfbeb1afc137 cbb231a3112cfb16"
        ).split()
    ),
    "D1": frozenset(
        (
            "1986301dd4dd8a2b 272d955796342ac2 5728ef8f0384e48c 87155fad0a8a0d52 "
            "87b8828690199f02 978f70865c0fdc74 d1b8a9a9b5ba45de e41ca613b58158ce"
        ).split()
    ),
    "D2": frozenset(
        (
            "0cf7c92896b7d0ad 24c3b94fc9e3e76e 481050c11966782d 54c7488e02908065 "
            "b897bceb7b707c8a bc1a3a64cee33ef7 fa18a090744b5b2f ff797c9443561b9f"
        ).split()
    ),
}


def reverses(mystery: str, mechanism: str) -> bool:
    """Whether the mechanism line holds a phrase that reverses or denies the mechanism."""
    variant = _variant(mystery)
    words = re.findall(r"[a-z0-9*^']+", str(mechanism).lower())
    grams = [" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)]
    return any(_digest(variant, g) in _REVERSED.get(variant, ()) for g in grams)
