"""Whether a sentence a learner wrote says anything: a `why`, a belief, an explanation.

Nothing is judged right or wrong here; only text that cannot be a reason is refused before it
is sealed or kept: fewer than `MIN_WORDS` words, keyboard noise (most words with no vowel, or
a row of one keyboard's letters), or no word of the domain (a layer, the loss, a gradient, a
step, the data, a label, a hypothesis ...). `says_nothing(text)` gives the reason as a few
words ("is 2 words long"), or None for a sentence that says something.
"""

from __future__ import annotations

import re

MIN_WORDS = 4
# Stems of the words a reason about a training run is made of; matched where a word starts.
DOMAIN = re.compile(
    r"\b(?:loss|grad|gradient|backward|backprop|autograd|graph|layer|weight|param|bias|optim|"
    r"sgd|adam|momentum|lr\b|learn|rate|step|updat|train|eval|valid|val_|test|dropout|batch|"
    r"token|eos|mask|pad|label|class|minorit|majorit|recall|precision|accura|metric|detach|"
    r"backbone|head|forward|zero_grad|curvat|hessian|eigen|overshoot|oscillat|diverg|converg|explod|"
    r"blow|nan\b|inf\b|norm|scale|scaler|overflow|underflow|fp16|bf16|fp32|float|amp\b|"
    r"logit|softmax|entropy|probab|data|shuffl|sampl|epoch|schedul|overfit|memori|signal|"
    r"noise|report|logger|log\b|raw|average|mean|sum|h[123]\b|hypothes|flat|fall|rise|grow|"
    r"drop|descend|plateau|stuck|stall|model|network|neuron|unit|relu|init|seed|run\b|"
    r"curve|output|input|predict|target|optimum|minimum|valley|sharp|handicap|regulari|"
    r"capacity|share|fraction|imbalanc|weighted)"
)
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _noise(word: str) -> bool:
    """A typed string that is not a word: no vowel (and longer than 3), or 4 keys side by side
    on one keyboard line ("asdf", "qwer", "lkjh")."""
    if len(word) > 3 and not re.search(r"[aeiouy]", word):
        return True
    return any(
        word[i : i + 4] in row or word[i : i + 4] in row[::-1]
        for row in _ROWS
        for i in range(len(word) - 3)
    )


def says_nothing(text: str) -> str | None:
    """Why `text` cannot be a reason ("is 2 words long", "is keyboard noise", "names nothing
    of the run"), or None."""
    words = re.findall(r"[a-z][a-z0-9_.']*", text.lower())
    if len(words) < MIN_WORDS:
        return f"is {len(words)} word{'s' if len(words) != 1 else ''} long"
    if sum(_noise(w) for w in words) * 2 >= len(words):
        return "is keyboard noise, not words"
    if not DOMAIN.search(text.lower()):
        return "names nothing of the run (no layer, loss, gradient, step, data or label)"
    return None
