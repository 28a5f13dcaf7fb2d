"""`labkit drill`: the terminal front end. Importing this module is cheap; the drill
itself (and torch) is imported when the command runs.

One command per line from stdin, so a pipe or a test can play a drill:

    printf 'probe raw_vs_reported\\nconvict H3 stale logger\\n' | labkit drill --seed 3

`--distributed` draws from the distributed zoo instead (two real gloo ranks, started once
per mystery: `labkit.learn.drill.ranks`); its seeds are a series of their own.
"""

from __future__ import annotations

import sys
import textwrap


def add_arguments(p) -> None:
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the mystery's seed: the same seed gives the same mystery (default: random)",
    )
    p.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="put a clock on the drill, e.g. 20 (default: no clock)",
    )
    p.add_argument(
        "--log",
        default=None,
        metavar="PATH",
        help="the learner store that keeps the drill log (default: $LABKIT_HOME/labkit.sqlite3, ~/.labkit)",
    )
    p.add_argument(
        "--answer",
        action="store_true",
        help="print the hidden setup of --seed and exit (for instructors and tests)",
    )
    p.add_argument(
        "--distributed",
        action="store_true",
        help="a distributed mystery: a DDP bug (or none) on two real gloo ranks, started once "
        "per mystery (10-20 s on two cores); its own seeds and probes",
    )
    p.add_argument("--stats", action="store_true", help="summarise the log and exit")
    p.add_argument(
        "--json",
        default=None,
        metavar="PATH",
        help="with --stats: write the summary as JSON to PATH, or to stdout with -",
    )
    p.add_argument(
        "--verbal",
        action="store_true",
        help="practise spoken answers for the seven curve cases, one answer per line",
    )


def fit(line: str, width: int = 100) -> list[str]:
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()))
    return textwrap.wrap(line, width=width, subsequent_indent=indent + "  ") or [line[:width]]


def say(line: str = "") -> None:
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    for part in fit(line):  # a terminal that cannot show a character gets a '?' instead
        print(part.encode(encoding, "replace").decode(encoding), flush=True)


def _lines():
    """Commands from stdin: with a prompt at a terminal, plain lines from a pipe, none when
    stdin is closed (``labkit drill <&-``): the drill is then saved as it stands."""
    if sys.stdin is None or sys.stdin.closed:
        return
    if sys.stdin.isatty():
        while True:
            try:
                yield input("drill> ")
            except EOFError:
                return
    else:
        yield from sys.stdin


def run(args) -> int:
    from ....errors import check_number
    from ..log import DrillLog

    check_number("--seed", args.seed, minimum=0, integer=True, allow_none=True)
    check_number("--minutes", args.minutes, minimum=0, strict_min=True, allow_none=True)
    log = DrillLog(args.log)
    if sum(map(bool, (args.answer, args.stats, args.verbal))) > 1:
        raise ValueError("use one of --answer, --stats and --verbal at a time.")
    if getattr(args, "distributed", False) and (args.stats or args.verbal):
        raise ValueError(
            "--distributed chooses the kind of mystery a drill draws; it goes with --seed, "
            "--minutes and --answer, not with --stats or --verbal (--stats counts both kinds, "
            "distributed bugs under 'ddp:')."
        )
    if args.json and not args.stats:
        raise ValueError("--json goes with --stats: `labkit drill --stats --json -`.")
    if args.stats:
        from ..stats import stats_lines

        attempts = log.attempts()
        if args.json:
            args.write_stats(attempts, str(log.path))  # the CLI's --json writer
        if args.json != "-":
            for line in stats_lines(attempts, str(log.path)):
                say(line)
        return 0
    if args.verbal:
        from ..verbal.terminal import play_verbal

        return play_verbal(log, _lines(), say)
    if args.answer:
        return _answer(args, log)
    return _play(args, log)


def _world(args) -> int:
    return 2 if getattr(args, "distributed", False) else 1


def _answer(args, log) -> int:
    from ..feedback import path_text
    from ..session import draw_kind

    if args.seed is None:
        raise ValueError("--answer needs --seed N: it shows the hidden setup of that seed.")
    m = draw_kind(args.seed, _world(args))
    for key, value in m.answer().items():
        say(f"{key}: {value}")
    say(f"cheapest path: {path_text(m.paths[0], m.menu)}")
    if log.path.exists() and log.mark_answer_seen(args.seed, world=_world(args)):
        say(f"note: the unfinished drill with seed {args.seed} in {log.path} will say so.")
    return 0


def _play(args, log) -> int:
    from ..ranks.launch import RanksFailed
    from ..session import Drill

    drill = Drill.open(args.seed, log=log, minutes=args.minutes, world=_world(args))
    if drill.resumed and args.minutes and drill.state["minutes"] != args.minutes:
        say(
            f"note: this drill keeps the clock it started with "
            f"({drill.state['minutes'] or 'none'}); --minutes applies to new drills."
        )
    try:
        drill.intro_lines(say)
    except RanksFailed as exc:  # a distributed mystery whose ranks failed: said, not raised
        print(f"labkit: error: {exc}; nothing was saved, try again.", file=sys.stderr)
        return 1
    if not drill.resumed:
        drill.state = log.save_session(drill.state)
    try:
        for line in _lines():
            drill.handle(line, say)
            if drill.finished:
                return 0
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP as the CLI turns them
        again = "labkit drill" + (" --distributed" if _world(args) == 2 else "")
        say(f"\ninterrupted: the drill is saved in {log.path}; `{again}` resumes it.")
        return 128 + getattr(exc, "signum", 2)  # the shell's status: 130 for Ctrl-C
    say(
        f"paused: the drill is saved in {log.path}; `labkit drill"
        + (f" --log {args.log}" if args.log else "")
        + (" --distributed" if _world(args) == 2 else "")
        + "` resumes it."
    )
    return 0
