"""The fault suite, acknowledgements: a learner told something was kept finds it kept, even
when the process is killed (SIGKILL) the moment the line appears.

A driver process loads labkit once, then forks one child per try; the child does one thing a
learner does through labkit's own code path (a drill hypothesis, a flashcard self-grade, a
sealed sketch, a graded notebook) and sends what labkit would show into a pipe; the driver
kills it as soon as the acknowledgement arrives, then reads the store. Twenty tries of each
kind take a few seconds.
"""

import json
import subprocess
import sys

DRIVER = r'''
import json, os, signal, sys
kinds, home, tries = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
import labkit
from pathlib import Path
from labkit.store.learner import default_store
from labkit.learn.drill.log import DrillLog  # everything imported once, before the forks
from labkit.learn.drill.session import Drill
from labkit.learn import grade as g
from labkit.learn.grade import batch as grade_batch
from labkit.widgets.flashcards import FlashcardDrill
from labkit.widgets.sketch import SketchForecast
grade_batch.preload()  # what `grade` imports first (torch._dynamo among it: 1 s), once


def act(i, emit):
    """One learner action through labkit's code, its acknowledgement sent to `emit`."""
    if kind == "drill":
        drill = Drill.open(3, log=DrillLog(path))
        drill.handle(f"hypothesis H3 try {i}", emit=emit)
    elif kind == "flashcard":
        panel = FlashcardDrill(path=path, today=f"2026-01-{i + 1:02d}")
        panel.show()
        panel.grade(True)
        emit(f"graded {panel.graded}")
    elif kind == "sketch":
        sketch = SketchForecast(points=[[0, 2.3], [39, 2.3 - 0.05 * i]], steps=40,
                                config=labkit.Config(steps=40), history_path=path)
        sketch.seal()
        emit(sketch.message)
    elif kind == "grade":
        g.grade_notebook = lambda nb, **kw: [g.Row(str(nb), "ex_a", "cell", "ex_a_null_groups",
                                                   "passed", f"try {i}", 3)]
        nb = Path(os.path.dirname(path)) / f"ex_a_try{i}.ipynb"

        class Pipe:
            def write(self, text):
                emit(text)
            def isatty(self):
                return False
        g.notebooks_in = grade_batch.notebooks_in = lambda paths: [nb]
        g.grade([nb], out=open(os.devnull, "w"), err=Pipe())


ACK = {"drill": b"hypothesis noted", "flashcard": b"graded 1", "sketch": b"saved to",
       "grade": b"graded ex_a_try"}


def kept(i):
    store = default_store(path)
    try:
        if kind == "drill":
            log = DrillLog(path)
            return ((log.open_session(3) or {}).get("hypothesis") or {}).get("text") == f"try {i}"
        if kind == "flashcard":
            return sum(r["body"]["seen"] for r in store.records("flashcard")) == i + 1
        if kind == "sketch":
            return store.count("forecast") == i + 1
        return sum(r["body"]["rows"][0]["message"] == f"try {i}" for r in store.records("grade")) == 1
    finally:
        store.close()


def tries_lost(tries):
    lost = []
    for i in range(tries):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the learner's process: one action, then it would wait for the next
            os.close(r)
            act(i, lambda line: os.write(w, (str(line) + "\n").encode()))
            signal.pause()
        os.close(w)
        seen = b""
        while ACK[kind] not in seen:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            seen += chunk
        os.kill(pid, signal.SIGKILL)  # the moment the acknowledgement is read
        os.waitpid(pid, 0)
        os.close(r)
        if ACK[kind] not in seen or not kept(i):
            lost.append(i)
    return lost


report = {}
for kind in kinds:  # each kind in a store of its own
    path = os.path.join(home, kind, "labkit.sqlite3")
    os.makedirs(os.path.dirname(path))
    os.environ["LABKIT_HOME"] = os.path.dirname(path)
    report[kind] = tries_lost(tries)
print(json.dumps(report))
'''


KINDS = ("drill", "flashcard", "sketch", "grade")


def test_a_kill_right_after_an_acknowledgement_finds_what_was_acknowledged_kept(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, ",".join(KINDS), str(tmp_path), "20"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {kind: [] for kind in KINDS}
