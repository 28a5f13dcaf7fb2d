"""`labkit drill --verbal`: the seven curve cases, one typed answer each, graded on the spot."""

from __future__ import annotations

import time

from . import ELEMENTS, grade, model_answer, report_lines
from .cases import CASES
from ..front.text import wrap


def play_verbal(log, lines, say) -> int:
    say("Verbal practice: answer each curve as you would out loud, on one line.")
    say(
        "Type `skip` to pass a case, `quit` to stop. The rubric is keyword-based: see docs/interview/verbal.md."
    )
    lines = iter(lines)
    done = 0
    for i, case in enumerate(CASES):
        say("")
        for line in wrap(f"Case {i + 1} of {len(CASES)} ({case.title}): {case.curve}"):
            say(line)
        answer = next(lines, None)
        if answer is None or answer.strip().lower() == "quit":
            break
        answer = answer.strip()
        if answer.lower() == "skip" or not answer:
            say("  skipped")
            continue
        for line in report_lines(i, answer):
            say(line)
        for line in wrap("a strong answer: " + model_answer(i), "  "):
            say(line)
        hits = grade(i, answer)
        log.append(
            {
                "kind": "verbal",
                "case": i + 1,
                "title": case.title,
                "answer": answer,
                "elements": {e: hits[e] for e in ELEMENTS},
                "finished_at": time.time(),
            }
        )
        done += 1
    say(f"{done} answer(s) graded and saved to {log.path}.")
    return 0
