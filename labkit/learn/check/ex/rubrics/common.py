"""Concepts several rubrics read: the layers of the toy model, a gradient lost or kept, and
which side of a cut. Each is a tuple of regular expressions matched where a word starts (see
`labkit.learn.check._meaning`); `NOUNS` are the concepts that are named, never denied."""

HEAD = (
    r"head\b",
    r"heads\b",
    r"classifier",
    r"(last|final|output|top) layer",
    r"readout",
    r"output projection",
)
BACKBONE = (
    r"backbone(?!\.\d)",
    r"hidden layers",
    r"(two|both) (hidden |backbone )?layers",
    r"first two layers",
    r"feature extractor",
    r"body\b",
    r"hidden (units|weights)",
    r"layers feeding",
)
FIRST = (r"backbone\.0", r"first (hidden )?layer", r"layer 0", r"input layer", r"bottom layer")
MIDDLE = (
    r"backbone\.2",
    r"second (hidden )?layer",
    r"middle layer",
    r"layer in the middle",
    r"hidden layer in the middle",
    r"other two",
)
LOSE = (
    r"none\b",
    r"null\b",
    r"no grad",
    r"nothing (flows|comes|gets|reaches|back)",
    r"(gets?|receives?|getting) nothing",
    r"los(e|es|ing|t)\b",
    r"never (gets?|receives?|reach|see)",
    r"without (a |any )?grad",
    r"cut off",
    r"left without",
    r"no backward",
    r"nothing back",
)
KEEP = (
    r"still (gets?|receives?|has|have|reach|learn|train|updat|flow|exist|connected|do)",
    (
        r"(gets?|receives?|getting|has|have) (a |its |their |real |nonzero )?"
        r"grad\w*(?! (is |of )?(none|null))"
    ),
    r"keeps? (its |their |a )?grad",
    r"keep theirs",
    r"keeps? (it|them)\b",
    r"reach(es|ed)?\b",
    r"flows? (in|back|to)",
    r"connected to the loss",
    r"trained\b",
    r"trains\b",
    r"learns?\b",
    r"learning\b",
    r"updat",
    r"other two do",
    r"gradients? (still )?exist",
    r"be differentiated",
    r"(still )?differentiable",
    r"(runs|goes|passes|flows|travels)( back)?( from the loss)? through",
)
EARLY = (
    r"before\b(?! (backbone\.2|the head|head|the second|(it )?(hits|reach|hitting|gets to)))",
    r"upstream",
    r"earlier",
    r"below",
    r"in front of",
    r"preced",
    r"input side",
    r"on the other side of",
    r"feeds? into",
    r"beyond (it|the)",
)
LATE = (
    r"after\b(?! (backbone\.0|the first|layer 0))",
    r"downstream",
    r"later",
    r"loss side",
    r"closer to the loss",
    r"between .{0,40}?and the loss",
    r"computed from (that|those|the detached|this|them|it\b)",
    r"on top of",
    r"above",
    r"follows?\b",
    r"comes? after",
    r"directly connected",
)
NOUNS = frozenset({"head", "backbone", "first", "middle", "majority", "minority", "eos"})
