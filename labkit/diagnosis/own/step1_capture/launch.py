"""Launching the ranks of a distributed setup (``world_size`` of 2 or more): `launch`.

labkit starts the ranks itself, on this machine's CPU: torch.multiprocessing with the "spawn"
start method (each rank a fresh Python process that imports `_rank` from this module and
receives the setups pickled), the gloo backend, a file rendezvous in a temporary folder, a
timeout on every collective (`COLLECTIVE_S`) and one on the whole launch (`timeout_s`).

On every rank, for each setup in turn: the learner's ``train(seed, epochs)`` runs on each
seed, watched (`rankhooks.observe`); the ranks exchange what they saw (one
``all_gather_object``), decide the same finding from the same data
(`step6_decide.ranks.choose`), and run its one-change intervention arm on each seed.
Every rank writes a status file at each optimizer step, so a rank that dies or hangs is
reported with what it was doing; a launch never waits past its timeout.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import sys
import time
import warnings
from importlib.machinery import PathFinder

COLLECTIVE_S = 30.0  # every collective: a rank left waiting on a dead one fails after this
LAUNCH_S = 300.0  # the whole launch, default
STOP_S = 1.0  # kept back from the launch's timeout to stop the ranks and read their files
EPOCHS = 3  # the learner's train() is asked for this many epochs: two at least to compare orders
EVERY = 10  # the watch's cross-rank check, every this many steps (and at the start and close)


# ---- setups whose module was loaded from a file path (`labkit triage --setup FILE.py:CLASS`):
# a rank imports each setup's class by its module's name, which no other process can import
# for such a module, so each rank first loads the file under the same name, as labkit did here.


def importable(module: str) -> bool:
    """True when a fresh process finds `module` by name (built in, or on sys.path)."""
    top = module.split(".")[0]
    return top in sys.builtin_module_names or PathFinder.find_spec(top, sys.path) is not None


def by_path(setups) -> list[tuple[str, str]]:
    """[(module name, file)] for each setup class whose module cannot be imported by name
    but was loaded from a Python file (and is registered under its name)."""
    found = {}
    for setup in setups:
        name = type(setup).__module__
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if name != "__main__" and not importable(name) and path and path.endswith(".py"):
            found[name] = path
    return sorted(found.items())


def load_by_path(modules) -> None:
    """In a rank: each (name, file) of `by_path` loaded under its name, as labkit loaded it."""
    import importlib.util
    import os

    for name, path in modules:
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.pop(0)


def pickled(setups: dict) -> bytes:
    """The setups as the ranks receive them; a sentence when one cannot travel."""
    files = dict(by_path(setups.values()))  # loaded by path: each rank loads them so too
    for setup in setups.values():
        cls = type(setup)
        where = f"setup {cls.__qualname__}"
        if cls.__module__ not in ("__main__", *files) and not importable(cls.__module__):
            raise TypeError(
                f"{where} comes from module {cls.__module__}, which has no file a fresh "
                "process could import it from (it was made in memory); each rank imports "
                "the setup's class, so define the class in a module file and import it "
                "from there."
            )
        if cls.__module__ == "__main__":
            raise TypeError(
                f"{where} is defined in __main__ (a notebook cell or the script you ran); "
                "with world_size > 1 labkit starts each rank with the 'spawn' start method, "
                "and a fresh process cannot import a class from another process's __main__. "
                f"Move class {cls.__qualname__} into a module file (e.g. my_setup.py next to "
                f"the notebook) and import it from there: from my_setup import {cls.__qualname__}."
            )
        if "<locals>" in cls.__qualname__:
            raise TypeError(
                f"{where} is defined inside a function; the ranks import it by name, so "
                "define it at the top level of a module."
            )
        try:
            pickle.dumps(setup)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise TypeError(
                f"{where} cannot be pickled ({type(exc).__name__}: {first}); each rank receives "
                "the setup pickled, so keep plain data and tensors on it and build models, "
                "loaders and open files inside its methods."
            ) from exc
    return pickle.dumps(list(setups.items()))


def _write(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)  # whole or not at all, even if the rank dies now


def _rank(
    rank, world, rendezvous, blob, seeds, out, collective_s, epochs, every, choose, read, files=()
) -> None:
    """One rank: every setup of `blob` in turn (see the module docstring). `choose` (the
    decision, passed in so that capturing imports no later step) picks the arm to run;
    `read` (the same) turns each run's replay into plain data (`rankhooks.observe`)."""
    import torch.distributed as dist

    from ....core.ddp_loop import join_gloo
    from .rankhooks import ARMS, observe

    status = {"rank": rank, "stage": "starting the rank", "done": False, "times": {}}
    path = os.path.join(out, f"status{rank}.json")

    def say(**kw) -> None:
        status.update(kw)
        status["times"].setdefault(status["stage"], time.time())  # when each stage began
        status["last"] = time.time()  # the rank that went quiet first is said first
        _write(path, status)

    def stepped(optimizer) -> None:
        say(step=status.get("step", 0) + 1)

    say()
    warnings.filterwarnings("ignore", message="`broadcast_buffers` is deprecated")  # torch 2.13
    results: dict = {}
    try:
        say(stage="unpickling the setups")
        load_by_path(files)  # setups loaded from a file path here (`labkit triage --setup`)
        setups = pickle.loads(blob)
        say(stage="joining the process group (gloo)")
        join_gloo(rank, world, rendezvous, collective_s)
        for label, setup in setups:
            own, signed = {}, {}
            for seed in seeds:
                say(stage="training", setup=label, seed=seed, arm="own", step=0)
                own[seed] = observe(setup, seed, epochs, None, every, stepped, read)
            say(stage="exchanging the evidence", step=None)
            own = _gather(dist, own, world)
            finding = choose(own, world) if choose is not None else None
            arm = finding.arm if finding is not None and finding.arm in ARMS else None
            if arm is not None:
                for seed in seeds:
                    say(stage="training", setup=label, seed=seed, arm=arm, step=0)
                    signed[seed] = observe(setup, seed, epochs, arm, every, stepped, read)
                say(stage="exchanging the evidence", step=None)
                signed = _gather(dist, signed, world)
            results[label] = {"own": own, "arm": arm, "signed": signed}
            _write(os.path.join(out, f"rank{rank}.json"), results)
        say(stage="finished", done=True)
    except BaseException as exc:  # the learner's code or a collective: said, not raised
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        say(error=f"{type(exc).__name__}: {first}")
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _gather(dist, evidence: dict, world: int) -> dict:
    """{seed: this rank's evidence} -> {seed: [rank 0's, rank 1's, ...]}, on every rank."""
    everyone = [None] * world
    dist.all_gather_object(everyone, evidence)
    return {str(seed): [r[seed] for r in everyone] for seed in evidence}


def _read(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def launch(
    setups: dict,
    world: int,
    seeds,
    choose,
    *,
    timeout_s: float = LAUNCH_S,
    collective_s: float = COLLECTIVE_S,
    epochs: int = EPOCHS,
    every: int = EVERY,
    read=None,
) -> dict:
    """Start `world` ranks, triage every setup of `setups` ({label: setup}) on them, with
    `choose(evidence, world)` (a module-level function) picking each one's arm (None: the
    learner's loop only, as a fix is judged) and `read` (module-level) reading each replay; returns
    {"results": {label: ...}, "problems": [sentences], "seconds": wall time}."""
    from ....core.process.children import owned, scratch_folder, start

    blob, started = pickled(setups), time.monotonic()
    with scratch_folder() as tmp:
        rendezvous = os.path.join(tmp, "rendezvous")
        args = (
            world,
            rendezvous,
            blob,
            list(seeds),
            tmp,
            collective_s,
            epochs,
            every,
            choose,
            read,
            by_path(setups.values()),
        )
        with owned(start(_rank, args, world)) as ctx:  # ended on every way out, Ctrl-C too
            procs = ctx.processes
            stopped = _wait(procs, tmp, started + timeout_s - STOP_S, collective_s)
        statuses = [_read(os.path.join(tmp, f"status{r}.json")) or {} for r in range(world)]
        results = [_read(os.path.join(tmp, f"rank{r}.json")) or {} for r in range(world)]
    problems = _problems(procs, statuses, stopped, timeout_s, collective_s)
    merged = {}
    for label in setups:
        found = [r[label] for r in results if label in r]
        if found:
            merged[label] = found[0]  # every rank gathered the same evidence
    return {
        "results": merged,
        "problems": problems,
        "seconds": time.monotonic() - started,
        "statuses": statuses,
    }


def _wait(procs, tmp: str, deadline: float, collective_s: float) -> dict:
    """Wait for the ranks; once one has stopped without finishing, give the others one
    collective timeout to notice, then stop them (at once if every live rank has been quiet
    for longer than that: hung). {rank: why labkit stopped it}."""
    first_dead = None
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        status = [_read(os.path.join(tmp, f"status{r}.json")) or {} for r in range(len(procs))]
        if first_dead is None and any(
            p.exitcode is not None and not s.get("done") for p, s in zip(procs, status)
        ):
            first_dead = time.monotonic()
        if first_dead is not None:
            quiet = [  # how long each live rank has said nothing
                time.time() - s.get("last", 0.0) for p, s in zip(procs, status) if p.is_alive()
            ]
            waited = time.monotonic() - first_dead
            if waited > collective_s + 2 or min(quiet, default=0.0) > collective_s + 1:
                break  # the live ranks have had a collective's time to notice, or are hung
        time.sleep(0.05)
    why = "the launch's timeout" if time.monotonic() >= deadline else "another rank's stop"
    stopped = {}
    for r, p in enumerate(procs):
        if p.is_alive():
            stopped[r] = why
            p.terminate()
            p.join(STOP_S / 2)
            if p.is_alive():
                p.kill()
                p.join(STOP_S / 2)
    return stopped


def _doing(s: dict) -> str:
    if s.get("stage") == "training":
        step = s.get("step") or 0
        return (
            f"while running {s['setup']}.train(seed {s['seed']}) ({s['arm']} arm), after "
            f"{step} optimizer step{'s' if step != 1 else ''}"
        )
    return f"while {s.get('stage', 'starting')}" + (f" ({s['setup']})" if s.get("setup") else "")


def _short(error: str) -> str:
    """gloo's error without its source path and its closing advice."""
    error = re.sub(r"\[/[^\]]*\] ", "", error)
    return error.split(". This is typically")[0]


def _problems(procs, statuses: list, stopped: dict, timeout_s: float, collective_s) -> list[str]:
    """One sentence per rank that did not finish, the rank that went quiet first first (the
    cause; the others then fail in a collective or wait in it)."""
    out = []
    for r, (p, s) in enumerate(zip(procs, statuses)):
        if s.get("done"):
            continue
        if r in stopped:
            when = (
                f"at the launch's timeout of {timeout_s:.0f} s"
                if stopped[r] == "the launch's timeout"
                else "once another rank had stopped"
            )
            said = (
                f"rank {r} hung {_doing(s)} (no optimizer step for longer than the "
                f"{collective_s:.0f} s collective timeout): labkit stopped it {when}"
            )
        elif not s:
            said = (
                f"rank {r} exited with code {p.exitcode} before it reached labkit's code: each "
                "rank is started with 'spawn', a fresh Python that first re-runs your script's "
                "top level and imports the setup's module; put the call to labkit.diagnose "
                "under if __name__ == '__main__': and check that the module imports cleanly"
            )
        elif s.get("error"):
            said = f"rank {r} failed {_doing(s)}: {_short(s['error'])}"
        else:
            code = p.exitcode
            how = (
                f"was killed by signal {signal.Signals(-code).name}"
                if code is not None and code < 0
                else f"exited with code {code}"
            )
            said = (
                f"rank {r} {how} {_doing(s)}, without a Python error (os._exit, a crash, or "
                "the process was killed)"
            )
        out.append((s.get("last", 0.0), said))
    return [said for _, said in sorted(out)]
