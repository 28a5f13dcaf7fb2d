"""Exercise B's rubrics: a group left out of the optimizer, then another subset."""

from ..._meaning import Idea, Rubric
from .common import BACKBONE, FIRST, HEAD, KEEP, MIDDLE, NOUNS

CONCEPTS = {
    "head": HEAD,
    "backbone": BACKBONE,
    "first": FIRST,
    "middle": MIDDLE,
    "keep": KEEP,
    "computed": (
        (
            r"backward (pass )?(still )?(computes|fills|populates|is unaffected|is unchanged|"
            r"is the same)"
        ),
        r"(fill|populat)\w* .{0,12}grad",
        (
            r"grad\w* (is |are )?(still )?"
            r"(computed|filled|populated)"
        ),
        r"still (gets?|has|have|receives?) (a )?grad",
        r"for (every|all|each) (weight|parameter)",
        r"regardless of the optimizer",
        r"(doesn't|does not) care about the optimizer",
        (
            r"(still )?(in|on|part of) the "
            r"(graph|computation|path)"
        ),
        r"not disconnect",
        (
            r"forward (pass )?(is )?"
            r"(unchanged|the same|still)"
        ),
        r"same (thing|forward)",
        r"requires_grad is still",
        r"still used",
        r"still connected",
        r"autograd",
        r"through every layer",
        r"(into|to|in|on) (every|all|each) (the )?(weight|parameter)",
        r"(does not|doesn't|won't) (change|affect|alter) the (graph|forward|backward)",
        r"(backprop|backward|autograd)\S* (still )?(computes|produces|gives|fills|writes)",
        (
            r"(all|every) (the )?(parameters?|weights?|layers?) (still )?"
            r"(gets?|has|have|receives?) "
            r"(a )?\.?grad"
        ),
        r"(doesn't|does not|don't) (know|care) about the optimizer",
    ),
    "no_grad": (
        r"no grad\w* at all",
        r"grad\w* (is|are|stays?) none",
        r"backward skips",
        r"(gets?|has|have|receives?) no grad",
        r"nothing to pile",
    ),
    "only_own": (
        r"only (updates|touches|moves|steps|applies|changes|zeroes|clears|resets)",
        r"only (the )?(parameters|tensors|weights|ones|what)",
        r"(it|optimizer) owns",
        r"its own (list|parameters)",
        r"param_groups",
        r"param(eter)? groups?",
        r"(not|isn't|aren't) (among|in|one of) the optimizer",
        r"excluded",
        r"(through|from) (that|the|its) (same )?(partial )?list",
        r"listed param",
        r"partial list",
        r"(doesn't|does not) know",
        r"what it was given",
        r"only the (listed|given|registered|owned) (ones|parameters|tensors|weights)",
        r"(handed|given|passed) (a|to)",
        r"only decides",
    ),
    "not_moved": (
        r"never (moves?|changes?|stepped|updated|applied)",
        r"stay put",
        r"no update",
        r"starting values",
        r"skips? (it|them)",
        r"stays? at (its )?random",
        r"(never|not) (be )?(stepped|updated)",
        r"keep their starting",
        r"skipped by",
        r"(do not|don't|does not|doesn't|did not|won't) (move|change)",
    ),
    "updates_unowned": (
        (
            r"(still )?updat\w* (the |every |all )?(left-out|parameters? (it|the "
            r"optimizer) (does|doesn't|do) not own|parameters? it does not own|"
            r"everything|every param|all param)"
        ),
        r"everything moves",
        r"keeps updating (it|them)",
        r"appl\w* .{0,15}to (all|every|them|the left|those|the ones)",
        (
            r"including (the ones|those|parameters) (it|the optimizer) "
            r"(does not|doesn't) own"
        ),
        (
            r"(step\(\)|optimizer|sgd|it) (still |also |then )?(updates|moves|changes|"
            r"steps|applies to) (them|it\b|every|all|the left|the excluded|the missing|"
            r"those|that group|the group)"
        ),
        r"(updates?|moves?) (them|it) anyway",
        r"updat\w* every (parameter|weight)s? (that has|with)",
    ),
    "accum": (
        r"accumul",
        r"piles?\b",
        r"pil(e|es|ing) up",
        r"add(s|ing)? up",
        r"sums?\b",
        r"summ",
        r"adds? (to|on top|new)",
        r"running (sum|total)",
        r"builds? up",
        r"grows?\b",
        r"growing",
        r"climbs?",
        r"keeps (summing|adding|growing)",
        r"on top of each other",
    ),
    "clears": (r"zero_grad", r"clear", r"reset", r"zero(e)?s\b", r"zeroed", r"zeroing"),
    "flat": (
        r"stays? flat",
        r"(stays?|is) the same size",
        r"stays the same",
        r"(doesn't|does not) grow",
    ),
    "all": (
        r"every (gradient|layer|grad)",
        r"all (the )?(gradients|layers|grads)",
        r"every layer's",
    ),
    "leftout": (
        r"left[- ]out",
        r"leaves? out",
        r"excluded",
        r"missing",
        r"not in the optimizer",
        r"forgotten",
        r"not (passed|handed|given) to",
        r"without",
        r"omitted",
        r"not in the (parameter|param) list",
        r"not (registered|included)",
        r"(isn't|is not) one of",
        r"no handle on",
        r"not among",
        r"skipped",
    ),
    "only_given": (
        r"only backbone\.0 and the head",
        r"only the head and backbone\.0",
        r"(backbone\.0 and the head|the head and backbone\.0) only",
        (
            r"(holds|has|owns|gets|contains) (only )?(backbone\.0 and the head|the head and "
            r"backbone\.0)"
        ),
    ),
    "random": (
        r"random",
        r"fixed",
        r"frozen",
        r"stuck",
        r"never[- ]trained",
        r"untrained",
        r"never trains",
        r"init",
    ),
    "worse": (
        r"worse",
        r"costs? more",
        r"hurts? more",
        r"harder",
        r"bottleneck",
        r"(can't|cannot) be compensated",
        r"more costly",
    ),
}
MECHANISM = Rubric(
    CONCEPTS,
    (
        Idea(
            "say why every parameter still gets a gradient",
            (("computed",),),
            ((("no_grad",), "that a parameter left out of the optimizer gets no gradient"),),
        ),
        Idea(
            "say what step() does with parameters it does not own",
            (("only_own",), ("not_moved",)),
            ((("updates_unowned",), "that step() updates parameters the optimizer does not own"),),
        ),
        Idea(
            "say why the left-out gradient grows",
            (("accum",), ("~clears",)),
            (
                (
                    ("clears", "all", "!~clears"),
                    "that zero_grad() clears the left-out gradient too",
                ),
                (("flat",), "that the left-out gradient does not grow"),
                (("~accum",), "that the left-out gradient does not pile up"),
            ),
        ),
        Idea(
            "say why leaving out the head costs more",
            (("head", "random"), ("head", "worse")),
            ((("backbone", "worse", "!head"), "that leaving out the backbone costs more"),),
        ),
    ),
    NOUNS,
)
TRANSFER_REASON = Rubric(
    CONCEPTS,
    (
        Idea(
            "say which group the optimizer leaves out",
            (("middle", "leftout"), ("middle", "only_own"), ("only_given",)),
            (
                (("head", "leftout", "!middle"), "that the head is the group left out"),
                (("first", "leftout", "!middle"), "that backbone.0 is the group left out"),
            ),
        ),
        Idea(
            "say what zero_grad() does to that group's gradient",
            (("accum",), ("~clears",)),
            (
                (("flat",), "that the left-out gradient stays flat"),
                (("no_grad",), "that the left-out group gets no gradient"),
                (("all", "accum"), "that every layer's gradient piles up"),
            ),
        ),
    ),
    NOUNS,
)
