"""`Drill`: one interview drill as a state machine over text commands.

    help | probes | symptom | hypothesis SYSTEM TEXT | forecast TEXT | probe NAME
    convict SYSTEM TEXT | quit

`handle(line)` runs one command and returns its output lines (also passed to `emit`).
After each command the state is saved to the drill log, and only then are its lines
emitted, so nothing the learner is told ("hypothesis noted") is lost to a kill; a slow
probe's "running ..." line alone is emitted before the probe runs. A drill killed between
commands resumes where it stopped. The state is plain JSON and never holds the bug's name.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

from ...errors import suggest
from .case import Case
from .feedback import ending_lines
from .forecasts import read_forecast
from .log import DrillLog
from .mystery import Mystery, draw, new_seed
from .menu import HELP, MENU, menu_lines
from .probes import answer
from .score import score
from .symptom import symptom_lines
from .words import OUTCOMES, read_outcome

BUDGET = 20  # credits: the most expensive cheapest path costs 12
COMMANDS = ("help", "probes", "symptom", "hypothesis", "forecast", "probe", "convict", "quit")
SYSTEMS = {"h1": "H1", "h2": "H2", "h3": "H3", "none": "NONE", "healthy": "NONE"}


def _intro(case, out) -> None:
    out("Training the mystery run: 50 steps ...")
    for line in _symptom(case):
        out(line)


def _symptom(case) -> list[str]:
    return symptom_lines(case.mystery, case.baseline().table["loss_reported"])


ONE_PROCESS = SimpleNamespace(  # what the session asks of a kind of mystery; drill.ranks.BOOK
    world=1,
    case=Case,
    intro=_intro,
    symptom=_symptom,
    menu=MENU,
    outcomes=OUTCOMES,
    menu_lines=menu_lines,
    answer=answer,
    read_forecast=read_forecast,
    running="  running {name} on the mystery's own code ...",
)


def book_of(mystery):
    """The rule book of `mystery`'s kind: one process, or two ranks (`drill.ranks`)."""
    if getattr(mystery, "world", 1) == 2:
        from .ranks import BOOK

        return BOOK
    return ONE_PROCESS


def draw_kind(seed: int | None, world: int = 1):
    """The mystery of `seed`: of the one-process zoo, or (`world=2`) of the distributed zoo."""
    if world == 2:
        from .ranks import draw_ranks

        return draw_ranks(seed)
    return draw(seed)


class Drill:
    def __init__(
        self,
        mystery: Mystery | None = None,
        *,
        budget: int = BUDGET,
        minutes: float | None = None,
        log: DrillLog | None = None,
        state: dict | None = None,
        clock=time.monotonic,
    ):
        world = state.get("world", 1) if state else 1
        self.mystery = mystery or draw_kind(state["seed"] if state else None, world)
        self.book = book_of(self.mystery)
        self.log, self.clock = log, clock
        self.state = state or {
            "format": "labkit.drill-session/1",
            "id": f"{time.time():.6f}-{new_seed()}",
            "seed": self.mystery.seed,
            "world": self.mystery.world,
            "budget": budget,
            "minutes": minutes,
            "spent": 0,
            "elapsed_s": 0.0,
            "hypothesis": None,
            "forecast": None,
            "probes": [],
            "finished": False,
            "revision": 0,
        }
        self.resumed = state is not None
        if self.resumed and state.get("saved_at"):  # the clock ran while the drill was away,
            self.state["elapsed_s"] += max(
                0.0, time.time() - state["saved_at"]
            )  # as in an interview
        self.case = self.book.case(self.mystery)
        self.result: dict | None = None  # the attempt, once finished
        self.last_answer = None  # the last probe's `Answer`, for front ends that plot it
        self._last = clock()

    @classmethod
    def open(
        cls, seed: int | None = None, *, log: DrillLog | None = None, world: int = 1, **settings
    ):
        """Resume the unfinished drill in `log` (with `seed`, if given, and of the same kind:
        `world` 1 for one process, 2 for a distributed mystery), or start a new one."""
        state = log.open_session(seed, world=world) if log is not None else None
        if state is not None:
            return cls(log=log, state=state)
        return cls(draw_kind(seed, world), log=log, **settings)

    # ---- reading ----------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.state["finished"]

    @property
    def left(self) -> int:
        return self.state["budget"] - self.state["spent"]

    def intro_lines(self, emit=None, *, typed: bool = True) -> list[str]:
        """The opening lines; `typed=False` (a panel of buttons) leaves out the `help` line."""
        out = _Out(emit)
        s = self.state
        if self.resumed:
            out(
                f"Resuming drill seed {s['seed']}: {len(s['probes'])} probe(s) run, "
                f"{self.left} of {s['budget']} credits left."
            )
        else:
            clock = f", a {s['minutes']:g}-minute clock" if s["minutes"] else ", no clock"
            out(
                f"Drill seed {s['seed']} (the same seed gives the same mystery): "
                f"{s['budget']} credits{clock}."
            )
        self.book.intro(self.case, out)
        for p in s["probes"] if self.resumed else []:
            out(f"  already run: {p['name']} -> {p['outcome']}")
        if s.get("hypothesis"):
            out(f"  hypothesis: {s['hypothesis']['system']} {s['hypothesis']['text']}")
        if typed:
            out("Type `help` for the commands, `probes` for the menu.")
        return out.lines

    # ---- commands -------------------------------------------------------------------
    def handle(self, line: str, emit=None) -> list[str]:
        out = _Out(emit, hold=True)  # emitted after the save (out.flush)
        text = line.strip()
        if self.finished:
            out("This drill is over; start another with `labkit drill`.")
            return out.lines
        self._tick()
        if not text or text.startswith("#"):
            return out.lines
        m = self.state["minutes"]
        if m and self.state["elapsed_s"] > m * 60:
            out(f"Time is up: the {m:g}-minute clock ran out before `{text}`.")
            self._finish(None, "clock", out)
            self._save()
            return out.flush()
        word, _, rest = text.partition(" ")
        word, rest = word.lower(), rest.strip()
        if word not in COMMANDS:
            out(
                f"error: unknown command {word!r};{suggest(word, COMMANDS).lower()} commands: "
                f"{', '.join(COMMANDS)}."
            )
        else:
            getattr(self, f"_cmd_{word}")(rest, out)
        self._save()
        return out.flush()

    def _cmd_help(self, rest, out):
        for line in HELP:
            out(line)

    def _cmd_symptom(self, rest, out):
        for line in self.book.symptom(self.case):
            out(line)

    def _cmd_probes(self, rest, out):
        for line in self.book.menu_lines(self.left):
            out(line)

    def _system(self, rest, command, out):
        word, _, text = rest.partition(" ")
        system = SYSTEMS.get(word.lower())
        if system is None or not text.strip():
            out(
                f"error: {command} needs a system (H1, H2, H3 or NONE) and a mechanism, e.g. "
                f"`{command} H3 the logger shows a stale value`; got {rest!r}."
            )
            return None
        return {"system": system, "text": text.strip()}

    def _cmd_hypothesis(self, rest, out):
        h = self._system(rest, "hypothesis", out)
        if h:
            self.state["hypothesis"] = h
            out(f"hypothesis noted: {h['system']} -- {h['text']}")

    def _cmd_forecast(self, rest, out):
        if not rest:
            out("error: forecast needs text, e.g. `forecast the raw loss falls: disagree`.")
            return
        outcomes = self.book.outcomes
        if not any(read_outcome(probe, rest, outcomes) for probe in outcomes):
            return out(
                f"error: {rest!r} names none of the outcomes a probe can show, so "
                "nothing could score it; `probes` lists them, e.g. `forecast disagree`."
            )
        self.forecast(text=rest)
        out("forecast sealed for your next probe.")

    def forecast(self, text: str = "", points=None, nan_step=None) -> None:
        """Seal a forecast for the next probe: words, or a drawn curve (step, loss) points."""
        self.state["forecast"] = {
            "text": text,
            "points": [list(p) for p in points or []],
            "nan_step": nan_step,
        }

    def _cmd_probe(self, rest, out):
        name, menu = rest.lower(), self.book.menu
        if name not in menu:
            out(
                f"error: unknown probe {rest!r};{suggest(name, menu).lower()} probes: "
                f"{', '.join(menu)}."
            )
            return
        done = {p["name"]: p for p in self.state["probes"]}
        if name in done:
            out(f"{name} was run already (no charge); its answer again:")
            for line in done[name]["lines"]:
                out(line)
            return
        price = menu[name].price
        if price > self.left:
            out(
                f"error: {name} costs {price} credit(s) and {self.left} are left; convict, "
                "quit, or choose a cheaper probe."
            )
            return
        s = self.state
        hyp, fc = s["hypothesis"], s["forecast"]
        predicted = self.book.read_forecast(name, fc, self.case) if fc else None
        if fc and predicted is None:  # refused before it is paid for: nothing could score it
            s["forecast"] = None  # set aside
            return out(
                f"error: your forecast names none of {name}'s outcomes "
                f"({', '.join(self.book.outcomes[name])}); it is set aside, nothing is charged: "
                "forecast again, or run the probe without one."
            )
        out(f"probe {name}: {price} credit(s), {self.left - price} left after it")
        out("  hypothesis: " + (f"{hyp['system']} {hyp['text']}" if hyp else "none stated"))
        out(self.book.running.format(name=name))
        out.flush()  # nothing kept is acknowledged in these lines
        ans = self.book.answer(self.case, name)
        how = "no forecast written" if fc is None else f"your forecast read as '{predicted}'"
        for line in ans.lines:
            out(line)
        verdict = "right" if predicted == ans.outcome else "not right"
        out(f"outcome: {ans.outcome} ({how}: {verdict if fc else 'no forecast points'})")
        s["spent"] += price
        s["forecast"] = None
        s["probes"].append(
            {
                "name": name,
                "price": price,
                "hypothesis": hyp,
                "forecast": fc,
                "predicted": predicted,
                "outcome": ans.outcome,
                "lines": ans.lines,
            }
        )
        self.last_answer = ans
        if self.left == 0:
            out("Your budget is spent: convict SYSTEM MECHANISM, or quit.")

    def _cmd_convict(self, rest, out):
        conviction = self._system(rest, "convict", out)
        if conviction:
            self._finish(conviction, "convicted", out)

    def _cmd_quit(self, rest, out):
        out("You gave up; here is the answer.")
        self._finish(None, "quit", out)

    # ---- ending and saving ----------------------------------------------------------
    def _finish(self, conviction, ended, out):
        s, m = self.state, self.mystery
        result = score(
            m,
            s["probes"],
            conviction,
            elapsed_s=s["elapsed_s"],
            minutes=s["minutes"],
            timed_out=ended == "clock",
        )
        for line in ending_lines(m, result, s["probes"], conviction):
            out(line)
        if s.get("answer_seen"):
            out("Note: the answer of this seed was shown (--answer) while it was open.")
        out(f"SCORE: {result.total}")
        s["finished"] = True
        self.result = {
            "kind": "drill",
            "id": s["id"],
            "seed": m.seed,
            "bug": m.bug,
            "system": m.system,
            "task": m.task,
            "run_seed": m.run_seed,
            "world": m.world,
            "conviction": conviction,
            "ended": ended,
            "score": result.total,
            "parts": result.as_dict(),
            "probes": [p["name"] for p in s["probes"]],
            "spent": s["spent"],
            "budget": s["budget"],
            "minutes": s["minutes"],
            "elapsed_s": round(s["elapsed_s"], 1),
            "finished_at": time.time(),
            "answer_seen": bool(s.get("answer_seen")),
        }

    def _tick(self):
        now = self.clock()
        self.state["elapsed_s"] += max(0.0, now - self._last)
        self._last = now

    def _save(self):
        if self.log is None:
            return
        if self.finished:
            self.log.finish(self.state, self.result)
        else:
            self.state = self.log.save_session(self.state)


class _Out:
    """The lines of one command; `hold`: emitted only at `flush`, after the save."""

    def __init__(self, emit, hold: bool = False):
        self.lines, self.emit, self.hold, self.sent = [], emit, hold, 0

    def __call__(self, line):
        self.lines.append(line)
        if not self.hold:
            self.flush()

    def flush(self) -> list[str]:
        for line in self.lines[self.sent :] if self.emit else []:
            self.emit(line)
        self.sent = len(self.lines)
        return self.lines
