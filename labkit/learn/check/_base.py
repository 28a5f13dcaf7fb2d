"""What every answer check shares."""


class CheckFailed(AssertionError):
    """Raised with a teaching sentence when an answer is not right yet."""


def layer_groups(answer, run) -> set[str]:
    """The answer as a set of names from `run.groups`; anything else is refused with a sentence."""
    if not isinstance(answer, (list, tuple, set, frozenset)) or not all(
            isinstance(g, str) for g in answer):
        raise CheckFailed(f"Answer with a list of layer-group names taken from run.groups; got "
                          f"{answer!r}.")
    unknown = sorted(set(answer) - set(run.groups))
    if unknown:
        raise CheckFailed(f"{unknown[0]!r} is not a layer group of this run: name groups exactly as "
                          "run.groups spells them, not modules or single tensors.")
    return set(answer)


def need_bool(answer) -> bool:
    """Refuse anything but True or False."""
    if not isinstance(answer, bool):
        raise CheckFailed(f"Answer True or False; got {answer!r}.")
    return answer


def need_one_of(answer, choices) -> str:
    """Refuse an answer outside `choices`."""
    if answer not in choices:
        raise CheckFailed(f"Answer with one of {', '.join(map(repr, choices))}; got {answer!r}.")
    return answer
