"""Exercise A's rubrics: a detach between backbone and head, then one layer deeper."""

from ..._meaning import Idea, Rubric
from .common import BACKBONE, EARLY, FIRST, HEAD, KEEP, LATE, LOSE, MIDDLE, NOUNS

CONCEPTS = {
    "head": HEAD,
    "backbone": BACKBONE,
    "first": FIRST,
    "middle": MIDDLE,
    "lose": LOSE,
    "keep": KEEP,
    "early": EARLY,
    "late": LATE,
    "cuts": (
        r"cut",
        r"sever",
        r"break",
        r"broke",
        r"no history",
        r"constant",
        r"leaf\b",
        r"requires_grad ?= ?false",
        r"stop",
        r"ends? (there|at)",
        r"can'?t get past",
        r"cannot get past",
        r"(leaves|off|out of) the graph",
        r"as far back as",
        r"hits the detach",
        r"only reaches",
        r"disconnect",
        r"removes? .{0,30}from the (computation )?graph",
        r"(not|never) track",
        r"untracked",
        r"no grad_fn",
    ),
    "passes": (
        (
            r"(travel|flow|go|pass|get|reach|propagat)\w*( back)? "
            r"(into|through|past|to|beyond)"
        ),
    ),
    "stays": (
        r"random",
        r"init",
        r"starting (values|weights)",
        r"never (move|chang|updat)",
        (
            r"(stay|stays|remain|remains|kept|keep|are) (the same|put|fixed|frozen|unchanged|"
            r"identical|exactly as)"
        ),
        r"frozen",
        r"fixed\b",
        r"unchanged",
        r"identical to",
        r"(don't|do not|does not|doesn't) (change|move)",
        r"skips? them",
        r"values they (were|started)",
        r"never (changed|updated|moved)",
    ),
    "from_loss": (r"from the loss",),
    "only_head": (
        r"only (the |reaches the )?(head|classifier|last layer|final layer)",
        r"just the head",
        r"head alone",
    ),
    "all": (
        r"no layer",
        r"every layer",
        r"all (the |three )?layers",
        r"not even the head",
        r"none of the layers",
        r"nothing learns",
        r"whole (model|network)",
        r"both the backbone and the head",
        r"(the )?backbone and the head (both|all)",
    ),
    "zero": (
        r"zero(es|s|ed)? (the |its |their )?(backbone'?s? )?grad",
        (
            r"grad\w* (is|are|becomes?|"
            r"of) (0|zero)"
        ),
        r"just zero",
        r"zeros?\b",
    ),
}
MECHANISM = Rubric(
    CONCEPTS,
    (
        Idea("say what detach() does to the graph", (("cuts",), ("~passes",))),
        Idea(
            "say what the backbone's gradient is",
            (("lose",), ("backbone", "~keep"), ("first", "~keep")),
            (
                (("backbone", "~lose"), "that the backbone's gradient is not None"),
                (("zero", "!~zero"), "that a gradient is zero, where the runs record None"),
                (("all", "lose"), "that every layer loses its gradient, the head too"),
                (("all", "~keep"), "that no layer gets a gradient, the head included"),
            ),
        ),
        Idea(
            "say why the head still learns (where it sits)",
            (("head", "late"), ("head", "keep", "from_loss"), ("only_head", "keep")),
            (
                (("head", "lose", "!backbone"), "that the head loses its gradient"),
                (("head", "~keep", "!backbone"), "that the head does not learn"),
                (("head", "early", "!backbone", "!late"), "that the head sits before the cut"),
            ),
        ),
        Idea(
            "say what the backbone's weights stay",
            (("stays",),),
            (
                (("backbone", "keep", "!head", "!~keep"), "that the backbone still learns"),
                (("all", "keep", "!~keep"), "that every layer still learns"),
                (("backbone", "late", "!head"), "that the backbone sits after the cut"),
            ),
        ),
    ),
    NOUNS,
)
TRANSFER_REASON = Rubric(
    CONCEPTS,
    (
        Idea(
            "say which layers lose the gradient, by where they sit relative to the detach",
            (("early", "lose"), ("first", "lose"), ("first", "~keep"), ("early", "~keep")),
            (
                (("late", "lose", "!early", "!first"), "that the layers after the detach lose it"),
                (("middle", "lose", "!first", "!early"), "that backbone.2 loses its gradient"),
                (("backbone", "lose", "!first", "!early"), "that the whole backbone loses it"),
                (("head", "lose", "!first", "!early"), "that the head loses its gradient"),
                (("all", "lose"), "that every layer loses its gradient"),
                (("all", "~keep"), "that no layer keeps a gradient"),
            ),
        ),
        Idea(
            "say which layers keep it, and why",
            (("late", "keep"), ("middle", "keep"), ("middle", "late")),
            (
                (("early", "keep", "!late", "!~keep"), "that the layers before the detach keep it"),
                (
                    ("first", "keep", "!middle", "!head", "!~keep"),
                    "that backbone.0 keeps its gradient",
                ),
                (("only_head", "keep"), "that only the head keeps its gradient"),
            ),
        ),
    ),
    NOUNS,
)
