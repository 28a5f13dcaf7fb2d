"""The ``labkit`` command. Bad input prints one line and exits with status 2."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

from .grade import add_grade
from .output import BARE, add_json, as_flag, deprecated, document, human, refuse_outputs, write_json
from .stop import outputs_kept, stopping
from .stop import name as stop_name, status as stop_status
from .store import add_export, add_import, add_store


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block, exit 2
        raise _Usage(f"{self.prog}: {message}")


class _Usage(Exception):
    pass


def _add_run(sub):
    p = sub.add_parser("run", help="train the reference setup and write its Run as JSON")
    p.add_argument("--task", help="classify (MLP, 10 blobs; the default) or lm (tiny causal LM)")
    p.add_argument("--seed", type=int, help="default 0")
    p.add_argument("--steps", type=int, help="default 200")
    p.add_argument(
        "--lr", type=float, default=None, help="default: 0.1 for classify (SGD), 3e-3 for lm (Adam)"
    )
    p.add_argument("--precision", help="fp32 (default) or fp16 (autocast + GradScaler)")
    p.add_argument("--bug", default=None, help="inject a bug from `labkit bugs`")
    add_json(p, "the Run (labkit.run/1)")
    p.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    from ..bugs.inject import train

    given = {
        "task": args.task,
        "seed": args.seed,
        "steps": args.steps,
        "lr": args.lr,
        "precision": args.precision,
    }
    run = train(bug=args.bug, **{k: v for k, v in given.items() if v is not None})
    target = args.json
    if target is None:  # labkit 0.1 printed the Run with no --json
        deprecated("`labkit run` with no --json printing the Run", "`labkit run --json -`")
        target = "-"
    print(run.summary(), file=sys.stderr)
    write_json(run.to_dict(), target, text=run.to_json())
    return 0


def _add_bugs(sub):
    p = sub.add_parser("bugs", help="list the bug zoo with a one-line symptom each")
    add_json(p, "the zoo (labkit.bugs/1: name, system, stage, symptom, ...)", bare_ok=True)
    p.set_defaults(func=cmd_bugs)


DDP_HOW = (
    "two gloo ranks under DistributedDataParallel: `labkit drill --distributed` (a mystery), "
    "notebook 18_distributed (the lesson), or labkit.bugs.ddp.DDP_BUGS with "
    "labkit.learn.lessons.ranks (your own launch)"
)


def cmd_bugs(args) -> int:
    from ..bugs import BUGS, SYSTEMS
    from ..bugs.ddp import DDP_BUGS

    keys = ("name", "system", "stage", "symptom", "mechanism", "exercise", "seam", "variants")
    listed = [{k: b.as_dict()[k] for k in keys} for b in BUGS.values()]
    ddp = [
        {"name": b.name, "symptom": b.symptom, "mechanism": b.mechanism, "seams": list(b.seams)}
        for b in DDP_BUGS.values()
        if b.name != "healthy"
    ]
    if args.json is BARE:  # labkit 0.1: a flag that printed the bare list
        deprecated("`labkit bugs --json` with no PATH", "`labkit bugs --json -`")
        print(json.dumps(listed, indent=2))
        return 0
    if args.json:
        doc = {"bugs": listed, "distributed": ddp, "distributed_how": DDP_HOW}
        write_json(document("labkit.bugs/1", doc), args.json)
        return 0
    width = max(map(len, list(BUGS) + [b["name"] for b in ddp]))
    for system, meaning in SYSTEMS.items():
        print(f"{system} {meaning}")
        for b in BUGS.values():
            if b.system == system:
                print(f"  {b.name:{width}}  {b.symptom}")
    print(f"Distributed ({len(ddp)} bugs of a DDP run; run each on {DDP_HOW}):")
    for b in ddp:
        print(f"  {b['name']:{width}}  {b['symptom']}")
    return 0


def _seeds(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"--seeds={text!r} must be two seeds like 0,1")
    a, b = (int(p) for p in parts)
    if a == b:
        raise argparse.ArgumentTypeError(f"--seeds={text!r} must name two different seeds")
    return a, b


def _add_triage(sub):
    p = sub.add_parser("triage", help="run the H3 -> H2 -> H1 triage and print the paper form")
    p.add_argument(
        "--bug", default=None, help="a bug from `labkit bugs`; omit for the healthy setup"
    )
    p.add_argument(
        "--setup",
        default=None,
        metavar="FILE.py:CLASS",
        help="triage your own code: a class with make_model, make_optimizer, batches, "
        "loss_fn and train (see README, 'Triage your own training code')",
    )
    p.add_argument("--task", default=None, help="classify or lm (healthy setup only)")
    p.add_argument("--seeds", type=_seeds, default=(0, 1), help="two seeds (default 0,1)")
    add_json(p, "the triage record (labkit.triage/1)")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --setup: the time your train() calls may take together (default 600)",
    )
    p.set_defaults(func=cmd_triage)


def cmd_triage(args) -> int:
    from ..bugs import get_bug
    from ..core.config import Config
    from ..diagnosis.diagnose import diagnose

    if args.setup is not None:
        from ..diagnosis.own.step1_capture.budget import check_budget

        check_budget(args.budget, "--budget")  # before the learner's file is loaded
        if args.bug or args.task:
            raise ValueError(
                "--setup triages your own code; it cannot be combined with --bug or --task."
            )
        from contextlib import redirect_stdout
        from ..diagnosis.own.step1_capture.setup import load

        try:  # with --json -, stdout holds one JSON document: what the setup prints goes to stderr
            with redirect_stdout(human(args.json)):
                record = diagnose(load(args.setup), seeds=args.seeds, budget_s=args.budget)
        except TypeError as exc:  # a method of the setup returned the wrong kind of thing
            raise ValueError(str(exc)) from exc
        return _print_record(record, args)
    if args.budget is not None:
        raise ValueError(
            "--budget bounds the train() of your own code; it applies only with --setup."
        )
    if args.bug is not None:
        bug = get_bug(args.bug)  # unknown names fail here, before any training
        if args.task:
            raise ValueError(
                f"--task applies only without --bug; {args.bug} runs under "
                f"task={bug.setup.get('task', 'classify')!r}."
            )
    config = Config.make(task=args.task) if args.task and not args.bug else None
    record = diagnose(args.bug, seeds=args.seeds, config=config)
    return _print_record(record, args)


def _print_record(record, args) -> int:
    from ..diagnosis.record.triage import TriageRefused

    if args.json == "-":
        write_json(record.to_dict(), "-")
    elif args.json:
        record.save(args.json)  # checked in main() before the triage
    out = human(args.json)
    print(record.to_text(), file=out)
    try:
        print(record.verdict(), file=out)
        return 0
    except TriageRefused as exc:
        d = record.rows["conviction"].get("data") or {}
        if d.get("system"):  # a suggestion the evidence could not yet confirm
            print(f"SUGGESTED (not confirmed): {d['system']} — {d.get('mechanism', '')}", file=out)
        print(f"CONVICTION: UNKNOWN — {exc}", file=out)
        return 1


def _add_checklist(sub):
    p = sub.add_parser("checklist", help="check the LLM training checklist on a real batch")
    p.add_argument("--task", default="lm", help="lm (the only task the checklist applies to)")
    p.add_argument(
        "--bug", default=None, help="plant a bug from `labkit bugs` first, e.g. double_shift"
    )
    p.add_argument("--seed", type=int, default=0, help="default 0")
    add_json(p, "the items and their evidence (labkit.checklist/1)")
    p.set_defaults(func=cmd_checklist)


def cmd_checklist(args) -> int:
    from ..learn.checklist import audit

    if args.bug is not None:
        from ..bugs import BUGS, get_bug

        bug = get_bug(args.bug)  # an unknown name fails here, with a suggestion
        if bug.setup.get("task") != "lm":
            lm = ", ".join(n for n, b in BUGS.items() if b.setup.get("task") == "lm")
            raise ValueError(
                f"bug {args.bug!r} is planted in the classifier; the checklist "
                f"audits causal-LM batches, so choose one of {lm}."
            )
    result = audit(task=args.task, bug=args.bug, seed=args.seed)
    print(result, file=human(args.json))
    if args.json:
        from dataclasses import asdict

        write_json(
            document(
                "labkit.checklist/1",
                {
                    "subject": result.subject,
                    "passed": result.passed,
                    "failed": result.failed,
                    "items": [asdict(r) for r in result.results],
                },
            ),
            args.json,
        )
    return 0 if result.passed else 1


def _add_forecasts(sub):
    p = sub.add_parser(
        "forecasts",
        help="your calibration record: scored forecasts by exercise and shape, and your habits",
    )
    add_json(p, "the report (labkit.calibration/1)")
    p.set_defaults(func=cmd_forecasts)


def cmd_forecasts(args) -> int:
    from ..forecast.history import ForecastHistory
    from ..learn import predictions

    report = ForecastHistory().report()
    report["predictions"] = predictions.summary()
    out = human(args.json)
    print(report["text"], file=out)
    print("\nSealed predictions in the exercises:\n" + report["predictions"], file=out)
    if args.json:
        write_json(document("labkit.calibration/1", report), args.json)
    return 0


def _add_drill(sub):
    from ..learn.drill.front.terminal import add_arguments  # cheap: the drill loads when it runs

    p = sub.add_parser("drill", help="an interview drill: a hidden bug, a probe budget, a score")
    add_arguments(p)
    p.set_defaults(func=cmd_drill)


def cmd_drill(args) -> int:
    from ..learn.drill.front.terminal import run

    def write_stats(attempts, path):
        from ..learn.drill.stats import stats_document

        write_json(document("labkit.drill_stats/1", stats_document(attempts, path)), args.json)

    args.write_stats = write_stats
    return run(args)


COMMANDS = [
    _add_run,
    _add_bugs,
    _add_triage,
    add_grade,
    _add_checklist,
    _add_forecasts,
    _add_drill,
    add_export,
    add_import,
    add_store,
]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(
        prog="labkit",
        description="labkit: train, break and diagnose toy "
        "PyTorch runs. See README.md for the study path.",
    )
    parser.add_argument("--version", action="version", version=f"labkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv=None) -> int:
    parser, args, started = build_parser(), None, time.time()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        refuse_outputs(args)  # before any work is done
        if args.command == "grade":  # grading handles its own signals (labkit.learn.grade)
            return args.func(args)
        with stopping():  # SIGTERM, SIGHUP: a clean stop, as Ctrl-C
            return args.func(args)
    except _Usage as exc:
        print(exc, file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: one line, the shell's status
        return _stopped(exc, args, started)
    except (ValueError, KeyError, OSError) as exc:  # OSError: a full disk, a read-only folder
        if (stop := _wrapped_stop(exc)) is not None:
            return _stopped(stop, args, started)
        msg = str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
        print(f"labkit: error: {as_flag(msg, args)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a stop raised inside Python's own machinery arrives wrapped
        if (stop := _wrapped_stop(exc)) is None:
            raise
        return _stopped(stop, args, started)


def _wrapped_stop(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C, SIGTERM or SIGHUP behind `exc`, if one is: a signal that lands while a
    class body is made (an import's `__set_name__`) reaches us as a RuntimeError caused by
    it, and is a stop all the same (seen: SIGHUP during torch's first optimizer)."""
    for _ in range(10):
        exc = exc.__cause__ or exc.__context__
        if exc is None or isinstance(exc, KeyboardInterrupt):
            return exc
    return None


def _stopped(exc: KeyboardInterrupt, args, started: float) -> int:
    """One line for a stop, and the shell's status for it."""
    why = getattr(exc, "said", None)  # grade: which notebooks were graded and kept
    if why is None:
        why = "nothing more was done"
        if args is not None:
            why = "; ".join(filter(None, [why, outputs_kept(args, started)]))
    how = "interrupted" if stop_name(exc) == "Ctrl-C" else f"stopped by {stop_name(exc)}"
    with contextlib.suppress(OSError, ValueError):  # SIGHUP: the terminal may be gone
        print(f"labkit: {how}; {why}.", file=sys.stderr)
    # A KeyboardInterrupt that left an `exec` of a string (dataclasses make their methods
    # so: a Ctrl-C during an import lands there) is marked by CPython as never handled,
    # caught or not, and `python -m labkit` then ends by SIGINT, not with the status
    # returned here; an `exec` of a string that completes clears the mark.
    exec("pass")  # noqa: S102
    return stop_status(exc)


if __name__ == "__main__":
    sys.exit(main())
