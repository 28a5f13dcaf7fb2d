"""Exercise C's rubrics: a learning-rate sweep read as a first-order gain against curvature."""

from ..._meaning import Idea, Rubric

_FIRST = r"(first[- ]order|linear|descent|the gain)( term| part| decrease| gain)?"
_CURV = r"(curvature|second[- ]order|quadratic|hessian|the cost|the penalty|the bend)( term| part)?"
_WINS = (
    r",? (only )?(wins|dominates|takes over|outweighs|matters|"
    r"is (the )?(largest|biggest|dominant))"
)
CONCEPTS = {
    "first_order": (
        r"first[- ]order",
        r"linear (term|part|gain|decrease)",
        r"lr ?\* ?\|\|g",
        r"descent term",
        r"\|\|g\|\|\^?2",
        r"gradient squared",
        r"squared gradient",
        r"(grows|scales|linear) (like|with|in) (the )?(lr|learning rate|step)",
        r"proportional to (the )?(lr|learning rate|step size)",
        r"in proportion to the step",
        r"the gain",
        r"progress is linear",
    ),
    "curvature": (
        r"curvature",
        r"second[- ]order",
        r"hessian",
        r"lr\^2",
        r"lr squared",
        r"quadratic",
        r"ghg",
        r"g\^t ?h ?g",
        r"square of (the )?(lr|learning rate|step)",
        r"(step size|learning rate) squared",
        r"\bbend",
        r"penalty",
        r"its square",
    ),
    "rounding": (
        r"float ?32",
        r"fp32",
        r"rounding",
        r"rounds?\b",
        r"round (away|to)",
        r"precision",
        r"round-?off",
        r"significant digits",
        r"32-bit",
        r"single precision",
        r"(cannot|can't) (even )?(represent|store)",
        r"resolution",
        r"swallow",
    ),
    "overflow": (r"overflow",),
    "no_part": (r"(plays|has) no (part|role)", r"not involved", r"irrelevant"),
    "grad_grows": (
        r"grad\w*( norm)? (grows|climbs|increases|gets bigger|explodes|blows up|rises)",
        r"gradient (gets|grows) (bigger|larger)",
        r"(grows|climbs|increases) (each|every)",
        r"explod",
        r"diverg",
        r"overflow",
        r"blows? up",
        r"norm (grows|climbs|increases)",
        r"keeps? (growing|climbing|increasing)",
        r"gets? (larger|bigger)",
    ),
    "grad_shrinks": (
        r"grad\w*( norm)? (shrinks|decreases|falls|vanishes|drops|settles)",
        r"norm (shrinks|decreases|falls)",
        r"(gradient|norm) .{0,12}to zero",
    ),
    "big": (
        r"lr (=|of )?30",
        r"at 30\b",
        r"large(st)? (lr|learning rate|step)",
        r"largest",
        r"big(gest)? (lr|step)",
        r"high(est)? (lr|learning rate)",
    ),
    "first_wins_big": (
        _FIRST + _WINS + r" (at|for) (lr )?(30|the largest|large|big|high)",
        r"at (lr )?30,? (the |its )?" + _FIRST + _WINS,
    ),
    "curv_wins_small": (
        _CURV + _WINS + r" (at|for) (the )?(small|tiny|low|1e-)",
        r"(at|for) (the )?(small|tiny|low)\w* (lr|learning rate)s?,? (the )?" + _CURV + _WINS,
    ),
    "curv_small": (r"curvature term is (tiny|small|negligible)",),
    "small": (r"1e-6", r"1e-4", r"small(est)? (lr|learning rate|step)", r"tiny", r"low(est)? lr"),
    "swapped": (
        (
            r"curvature (term )?(grows |scales )?(like|with|linearly in|in proportion to) "
            r"(the )?(lr|learning rate)(?! ?squared|\^)"
        ),
        (
            r"first[- ]order( term)?( grows| scales)? (like|with|as) (the )?(lr|learning rate) "
            r"?(squared|\^2)"
        ),
    ),
    "sharper": (
        r"sharp",
        r"narrow",
        r"steep",
        r"too (large|big|long) (a step )?for (it|that|this|the)",
        r"more (sharply )?curved",
        r"bends more",
        r"larger curvature",
        r"curvature is (larger|higher|bigger|greater|steeper)",
        r"steeper[- ]curved",
        r"eigenvalue .{0,25}(larger|bigger|higher)",
        r"(higher|larger|bigger) curvature",
    ),
    "limit": (
        r"stable limit",
        r"limit",
        r"2 ?/",
        r"threshold",
        r"(exceeds|above) 2\b",
        r"too long a stride",
        r"past the step size",
        r"tolerates",
        r"largest stable",
        r"stable step",
        r"unstable",
        r"2 divided",
    ),
    "flatter": (
        r"curvature is (smaller|lower|flatter|the same)",
        r"flat(ter)?\b",
        r"(smaller|lower) curvature",
        r"same everywhere",
        r"(doesn't|does not) change",
        r"below the (stable )?limit",
        r"under the .{0,15}limit",
        r"\bsafe\b",
    ),
    "vanish": (r"grad\w* vanish", r"nothing to overshoot"),
}
MECHANISM = Rubric(
    CONCEPTS,
    (
        Idea(
            "name the first-order term, the descent that grows like lr",
            (("first_order",),),
            (
                (("first_wins_big",), "that the first-order term wins at the largest LR"),
                (("swapped",), "that the two terms grow the other way round with lr"),
            ),
        ),
        Idea(
            "name the curvature term that grows like lr squared",
            (("curvature",),),
            (
                (("curv_wins_small",), "that the curvature term matters most at the smallest LRs"),
                (
                    ("curv_small", "!small"),
                    "that the curvature term is negligible at the largest LR",
                ),
            ),
        ),
        Idea(
            "say why the smallest LRs barely move (the number format)",
            (("rounding",),),
            (
                (("~rounding",), "that float32 rounding plays no part at the smallest LRs"),
                (
                    ("rounding", "no_part"),
                    "that float32 rounding plays no part at the smallest LRs",
                ),
                (("rounding", "big", "!small"), "that float32 rounding breaks the largest LR"),
                (("rounding", "overflow"), "that float32 rounding is what overflows"),
            ),
        ),
        Idea(
            "say what the largest LR does to the gradient norm",
            (("grad_grows",),),
            ((("grad_shrinks",), "that the gradient shrinks or vanishes"),),
        ),
    ),
)
TRANSFER_REASON = Rubric(
    CONCEPTS,
    (
        Idea(
            "compare the new step size with a stable limit set by curvature",
            (("sharper",), ("limit", "curvature", "!flatter")),
            (
                (
                    ("flatter",),
                    "that the curvature there is no larger, so lr 10 stays under the limit",
                ),
                (("rounding",), "that float32 rounding is what decides the x10 arm"),
                (("vanish",), "that the gradient vanishes by step 100"),
            ),
        ),
    ),
)
