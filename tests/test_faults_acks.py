"""The fault suite, acknowledgements: a learner told something was kept finds it kept, even
when the process is killed (SIGKILL) the moment the line appears.

A driver process loads labkit once, then forks one child per try; the child answers one
drill command into a pipe, and the driver kills it as soon as the acknowledgement arrives,
then reads the store. Twenty tries take about two seconds.
"""

import json
import subprocess
import sys

DRIVER = r'''
import json, os, signal, sys
from labkit.learn.drill.log import DrillLog
from labkit.learn.drill.session import Drill
path, tries, lost = sys.argv[1], int(sys.argv[2]), []
for i in range(tries):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the learner's drill: one command, then it would wait for the next
        os.close(r)
        drill = Drill.open(3, log=DrillLog(path))
        drill.handle(f"hypothesis H3 try {i}", emit=lambda line: os.write(w, (line + "\n").encode()))
        signal.pause()
    os.close(w)
    seen = b""
    while b"hypothesis noted" not in seen:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        seen += chunk
    os.kill(pid, signal.SIGKILL)  # the moment the acknowledgement is read
    os.waitpid(pid, 0)
    os.close(r)
    log = DrillLog(path)
    kept = ((log.open_session(3) or {}).get("hypothesis") or {}).get("text")
    log.store.close()
    if b"hypothesis noted" not in seen or kept != f"try {i}":
        lost.append(i)
print(json.dumps({"lost": lost}))
'''


def test_a_kill_right_after_hypothesis_noted_finds_the_hypothesis_kept(tmp_path):
    done = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path / "labkit.sqlite3"), "20"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"lost": []}
