"""The lowest loss any model can reach on labkit's token corpus, from the generator itself.

`make_tokens` writes ``BOS prompt SEP response EOS PAD...``: prompt lengths and response
lengths uniform on their ranges, prompt tokens uniform over the content ids, and each
response token drawn from a fixed table of two successors per token (`successor_table`,
the generator's own table; the two may coincide). So the true next-token distribution at
any position is known exactly: after m response tokens the response ends with probability
h_m = P(length = m | length >= m), else the next token is one of the two successors, each
with half the rest. The best expected loss at a target is the entropy of that distribution;
`floor` averages it over a split's supervised targets. `ahead=2` does the same for a model
trained to predict two tokens ahead (labels shifted twice), which only ever sees targets
that are response tokens or EOS.
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch

from ..core.data import BOS, EOS, IGNORE, N_SPECIAL, PAD, SEP, _successors

PROMPT_LEN = (3, 8)  # make_tokens' defaults, the ranges labkit trains on
RESPONSE_LEN = (3, 8)


def successor_table(vocab_size: int = 50, seed: int = 0) -> torch.Tensor:
    """(vocab_size, 2): the two successors of every token, as make_tokens(seed=seed) drew them."""
    return _successors(vocab_size, torch.Generator().manual_seed(seed))


def _stop(j: int, lengths: tuple) -> float:
    """P(length = j | length >= j) for a length uniform on `lengths`."""
    low, high = lengths
    return 0.0 if j < low else 1.0 / (high - j + 1)


def _entropy(dist: dict) -> float:
    return -sum(p * math.log(p) for p in dist.values() if p > 0)


def _next(succ, tok: int, emitted: int) -> dict:
    """The next response token (or EOS) after `emitted` tokens, the last being `tok`."""
    dist = defaultdict(float)
    stop = _stop(emitted, RESPONSE_LEN)
    dist[EOS] += stop
    for s in succ[tok].tolist():
        dist[s] += (1 - stop) / 2
    return dist


def _two_ahead(succ, tok: int, emitted: int) -> dict:
    """The token two steps on, given that it is a response token or EOS."""
    dist = defaultdict(float)
    stop = _stop(emitted + 1, RESPONSE_LEN)
    dist[EOS] += stop
    for s1 in succ[tok].tolist():
        for s2 in succ[s1].tolist():
            dist[s2] += (1 - stop) / 4
    return dist


def _prompt_next(t: int, vocab_size: int) -> dict:
    """After BOS and t prompt tokens: SEP, or another uniform prompt token."""
    stop = _stop(t, PROMPT_LEN)
    n_content = vocab_size - N_SPECIAL
    dist = dict.fromkeys(range(N_SPECIAL, vocab_size), (1 - stop) / n_content)
    dist[SEP] = stop
    return dist


def target_entropies(split: dict, succ: torch.Tensor, ahead: int = 1, labels=None) -> list:
    """The best expected loss at every supervised target of `split`, in nats.

    `labels` (default ``split["labels"]``) says which input positions are targets; the model
    at position t predicts input position t + `ahead`.
    """
    if ahead not in (1, 2):
        raise ValueError(f"ahead must be 1 or 2; got {ahead!r}.")
    labels = split["labels"] if labels is None else labels
    vocab_size = succ.shape[0]
    out = []
    for ids, lab in zip(split["input_ids"].tolist(), labels.tolist()):
        if ids[0] != BOS:
            raise ValueError("Each sequence must start with BOS, as make_tokens writes it.")
        sep, eos = ids.index(SEP), ids.index(EOS)
        for q in range(ahead, len(ids)):
            if lab[q] == IGNORE:
                continue
            t = q - ahead
            if q > eos:  # padding after EOS: certain once EOS is seen
                if ahead != 1 or ids[q] != PAD:
                    raise ValueError("Only next-token targets may be padding.")
                out.append(0.0)
            elif q <= sep:  # a prompt token or SEP
                if ahead != 1:
                    raise ValueError("Two-ahead targets must be response tokens or EOS.")
                out.append(_entropy(_prompt_next(t, vocab_size)))
            elif t < sep:  # two ahead from the last prompt token: the first response token
                out.append(_entropy(_next(succ, ids[t], 0)))
            else:
                emitted = t - sep
                tok = ids[t] if emitted else ids[sep - 1]
                dist = _next(succ, tok, emitted) if ahead == 1 else _two_ahead(succ, tok, emitted)
                out.append(_entropy(dist))
    return out


def floor(split: dict, succ: torch.Tensor, ahead: int = 1, labels=None) -> float:
    """The mean of `target_entropies`: the loss floor of a split's targets."""
    values = target_entropies(split, succ, ahead, labels)
    return sum(values) / len(values)
