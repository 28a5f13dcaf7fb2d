"""Exercise E's rubrics: four masking bugs, then EOS masked out of the labels."""

from ..._meaning import Idea, Rubric
from .common import NOUNS

CONCEPTS = {
    "two_ahead": (
        r"two ahead",
        r"2 ahead",
        r"two (tokens|steps|positions|places) ahead",
        r"t ?\+ ?2",
        r"token after next",
        r"two (tokens|positions) (later|further)",
        r"off by one extra",
        r"off by two",
        r"skips? (a|one) token",
        r"after (the )?next",
        r"next (token )?but one",
        r"one (token |position )?further",
    ),
    "shift": (r"double[ _]shift", r"two shifts", r"shift\w* twice", r"two ahead", r"t ?\+ ?2"),
    "previous": (r"previous token", r"one behind", r"t ?- ?1\b", r"token before"),
    "pad": (r"pad",),
    "easy": (
        r"trivial",
        r"easy",
        r"easil",
        r"easier",
        r"cheap",
        r"for free",
        r"\bfree\b",
        r"certain",
        r"(?<!least )(?<!less )predictable",
        r"always (pad|the same|the next)",
        r"costs? (almost )?nothing",
        r"gets? (those|them) right",
        r"right every time",
    ),
    "hard": (r"hard", r"random noise", r"raises?\b", r"higher", r"unpredictable"),
    "lowers": (
        r"lowers? the loss",
        r"(loss|curve) (to )?(drops?|falls?|go(es)? down|is lower)",
        r"lower (the|its) (loss|curve)",
        r"ends? (up )?lower",
        r"(reaches|has|settles at) a lower (floor|loss|minimum|plateau)",
    ),
    "pulls_down": (r"(drag|pull)\w* .{0,15}down", r"dilut", r"flatter"),
    "ignored": (r"pad\w* (is |are )?(ignored|masked|not counted)",),
    "empty": (
        r"0 ?/ ?0",
        r"zero (supervised )?tokens",
        r"no targets?",
        r"no supervised",
        r"empty",
        r"divid\w* by (zero|0|a count of 0)",
        r"division by zero",
        r"nothing to average",
        r"count of 0",
        r"no (unmasked )?labels",
        r"no tokens? (count|left)",
        r"(mean|average) (of|over) (an empty|nothing|zero)",
    ),
    "overflow": (r"(learning rate|lr) (is )?too high", r"explod", r"overflow"),
    "prompt": (r"prompt",),
    "random": (
        r"random",
        r"uniform",
        r"noise",
        r"unlearnable",
        r"irreducible",
        r"(cannot|can't|impossible to|never) (be )?(learn|predict|guess)",
        r"unpredictable",
        r"no model can guess",
    ),
    "eos": (r"eos", r"end[- ]of[- ](sequence|text)", r"end token", r"stop token", r"last target"),
    "length": (
        r"length",
        (
            r"(when|where) (the |an |a )?(response|answer|it|sequence|output|reply) "
            r"(ends|stops|finishes)"
        ),
        r"when to stop",
        r"where (it|the response|an answer) (ends|finishes|stops)",
        r"timing",
        r"end of the response",
        r"(can't|cannot) be known in advance",
        r"to finish",
    ),
    "costly": (
        r"hard",
        r"expensive",
        r"high[- ]loss",
        r"least predictable",
        r"a lot of loss",
        r"unpredictable",
    ),
    "hard_target": (
        (
            r"(hard|hardest|expensive|costliest|costly|high-loss|most uncertain) "
            r"(target|token|position)"
        ),
    ),
    "fixed": (r"length is fixed", r"fixed length"),
    "val": (r"val_response_loss", r"validation", r"response[- ]mask", r"response validation"),
    "scored": (
        r"still (scores|counts|includes)",
        r"includes",
        r"scores eos",
        r"counts (that|it)",
        r"never (learns|learned|taught)",
        r"was never",
        r"unlearned",
        r"goes up",
        r"rises",
        r"higher",
        r"worse",
    ),
    "unchanged": (
        r"ignor",
        r"unaffected",
        r"stays the same",
        r"(does not|doesn't) change",
        r"no difference",
    ),
    "train_up": (
        r"raises the training loss",
        r"training loss (goes up|rises|is higher)",
        r"makes the training loss go up",
        r"training loss .{0,12}go(es)? up",
    ),
    "still_learns": (r"still learns when",),
    "nan": (r"\bnan\b",),
}
MECHANISM = Rubric(
    CONCEPTS,
    (
        Idea(
            "say what the double shift makes each position predict",
            (("two_ahead",),),
            (
                (("shift", "lowers"), "that the double shift lowers the loss"),
                (("shift", "easy", "!~easy"), "that the double shift makes the task easier"),
                (("previous",), "that each position predicts the token before it"),
            ),
        ),
        Idea(
            "say why padding in the loss flatters the curve",
            (("pad", "easy"), ("pad", "pulls_down")),
            (
                (("pad", "~easy"), "that padding targets are hard to predict"),
                (("pad", "hard", "!easy"), "that padding makes the loss higher"),
                (("ignored",), "that the loss ignores padding in this bug"),
            ),
        ),
        Idea(
            "say why the all-masked run is NaN",
            (("empty",),),
            ((("overflow",), "that the all-masked run is NaN because something overflows"),),
        ),
        Idea(
            "say what the prompt tokens add to the loss",
            (("prompt", "random"),),
            (
                (("prompt", "easy", "!~easy"), "that the prompt tokens are easy to predict"),
                (("prompt", "lowers"), "that the prompt tokens lower the loss"),
            ),
        ),
    ),
    NOUNS,
)
TRANSFER_REASON = Rubric(
    CONCEPTS,
    (
        Idea(
            "say what is special about predicting EOS",
            (("length",), ("eos", "costly"), ("hard_target",)),
            (
                (("eos", "easy", "!~easy"), "that EOS is easy to predict"),
                (("fixed",), "that the response length is fixed"),
                (("train_up",), "that masking EOS raises the training loss"),
                (("nan",), "that masking EOS makes the run NaN"),
            ),
        ),
        Idea(
            "say what the response-only validation loss still scores",
            (("val", "scored"),),
            (
                (("val", "~scored"), "that the response-only validation loss does not score EOS"),
                (("val", "unchanged"), "that the response-only validation loss stays as it was"),
                (("still_learns",), "that the model still learns when a response ends"),
            ),
        ),
    ),
    NOUNS,
)
