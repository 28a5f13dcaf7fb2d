"""Exercise D's rubrics: validation below training, read as dropout, eval() and an epoch mean."""

from ..._meaning import Idea, Rubric

_EVAL = r"(eval\(\)|eval mode|evaluation mode|model\.eval\(\))"
CONCEPTS = {
    "drops": (
        r"zero(es|s)\b",
        r"zeroed",
        r"drops?\b",
        r"dropped",
        r"knocks? out",
        r"silenc",
        r"deactivates (units|half|neurons)",
        r"missing half",
        r"randomly (deactivat|remov)",
        r"half (of )?(the |its )?(hidden )?(units|neurons|activations)",
        r"handicap",
        r"crippl",
        r"thinned",
        r"weaker",
        r"noisier",
        r"random(ly)? (half|units|subset|mask)",
    ),
    "eval": (r"eval\(\)", r"eval mode", r"evaluation", r"model\.eval"),
    "off": (
        r"(turns?|switch(es)?|switching) (dropout |it |that .{0,25})?off",
        r"dropout off",
        r"(disabl|deactivat)\w* (dropout|that|the random|it\b|them\b)",
        r"no dropout",
        r"(uses|use|keeps|scores|sees) (all|the whole|the full|every)",
        r"full network",
        r"whole network",
        r"all units",
        r"(is )?off\b",
    ),
    "nograd": (r"no_grad", r"disabling gradient", r"torch\.no_grad"),
    "autograd": (
        r"autograd",
        r"graph",
        r"grad_fn",
        r"gradient (tracking|bookkeeping|computation)",
        r"record",
    ),
    "avg": (
        r"running (mean|average)",
        r"epoch[- ](long )?(mean|average)",
        r"(averag|mean)\w* (over|across) .{0,20}(epoch|batches|steps)",
        r"mean over the epoch",
        r"older weights",
        r"earlier weights",
        r"(worse|early|earlier) (weights|batches|part)",
        r"still improving",
        r"lags",
        r"weights at each step",
    ),
    "eval_same": (_EVAL + r" (does not|doesn't|did not|won't) (change|affect|touch|turn|switch)",),
    "eval_drops": (
        r"(dropout|it) (is )?(active|on|still on|applied) in eval",
        r"in " + _EVAL + r",? (dropout|it) (zeroes|zeros|drops|is on)",
        (
            r"eval(\(\)| mode)? (drops|zeroes|zeros|removes|switches off) "
            r"(half|units|some)"
        ),
    ),
    "train_off": (r"train(ing)?(\(\))? mode,? dropout is (off|inactive|disabled)",),
    "train_full": (r"train(ing)?(\(\))? mode,? .{0,20}(keeps|uses|all|every|the full|the whole)",),
    "leak": (r"leak", r"duplicat", r"contamina", r"overlap"),
    "stronger": (r"stronger", r"training loss is lower"),
    "fewer": (
        r"fewer",
        r"drops? less",
        r"a fifth",
        r"20%",
        r"four in five",
        r"80%",
        r"less (dropout|handicap|crippled|thinned)",
        r"(lower|smaller) (dropout )?rate",
        r"milder",
        r"weakens?",
        r"less\b",
    ),
    "closer": (
        r"closer to",
        r"nearer",
        r"near(ly)? (the|whole|intact|full|complete)",
        r"(gap|difference)( to \S+)? (shrinks|gets smaller|is smaller|narrows|closes)",
        r"(most|four in five|80%) (of the )?units (are )?(kept|survive|stay)",
        r"one (unit )?in five",
    ),
    "more": (
        r"drops? more",
        r"more (units|neurons) (are )?(dropped|zeroed)",
        r"more handicapped",
        r"handicap is bigger",
        r"bigger handicap",
    ),
    "larger": (r"(gap|difference) (grows|is larger|gets larger|is bigger|widens|increases)",),
    "same": (r"(rate|dropout) (doesn't|does not) matter", r"stays the same"),
}
MECHANISM = Rubric(
    CONCEPTS,
    (
        Idea(
            "say what dropout does to the online loss in train() mode",
            (("drops",),),
            (
                (("eval_drops",), "that dropout acts in eval() mode"),
                (("train_full",), "that train() mode uses every unit"),
                (("train_off",), "that dropout is off in train() mode"),
                (("stronger",), "that dropout makes the train()-mode network stronger"),
                (("leak",), "that the validation data leaks into training"),
            ),
        ),
        Idea(
            "say what eval() changes",
            (("eval", "off"),),
            (
                (("eval_same",), "that eval() leaves dropout as it is"),
                (("eval", "autograd", "!nograd"), "that eval() is what stops autograd"),
            ),
        ),
        Idea("say what the online number averages over", (("avg",),)),
        Idea(
            "say what no_grad() switches instead",
            (("nograd", "autograd"), ("nograd", "~autograd")),
            ((("nograd", "off", "!autograd"), "that no_grad() switches dropout off"),),
        ),
    ),
)
TRANSFER_REASON = Rubric(
    CONCEPTS,
    (
        Idea(
            "say how the share of dropped units changes the handicap",
            (("fewer",), ("closer",)),
            (
                (("more",), "that a lower rate drops more units or handicaps the network more"),
                (("larger",), "that the gap grows"),
                (("same",), "that the dropout rate leaves the gap as it is"),
            ),
        ),
    ),
)
