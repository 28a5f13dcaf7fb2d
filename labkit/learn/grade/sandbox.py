"""The sandbox a submission runs in: one bubblewrap (`bwrap`) command line states every boundary.

    read-only      the system (/usr and the links to it, a few files of /etc), the Python
                   install, the environment labkit runs from and labkit itself; nothing else
                   of the grader's machine is there (not the class's other notebooks, not the
                   instructor's hidden checks, not the grader's reports)
    private        /tmp and /dev/shm (empty, in memory); /proc of its own PID namespace
    writable       `work` alone: a folder of the submission's own, removed afterwards
    new            PID, network, IPC, UTS and cgroup namespaces; a new session; no capability
    environment    cleared, then `env` alone (the caller's allow-list, `allowed_env`)
    ends           with its parent (`--die-with-parent`); whatever it started ends with it
                   (the PID namespace), double-forked daemons included
    memory         `memory` bytes of address space per process (`prlimit --as`)
    processes      at most `processes` tasks (processes and threads) at once, so a fork bomb
                   fails its own forks and never starves grading: a cgroup of its own with
                   a pids limit where one can be made (`process_limit`), else, for a grader
                   that is not root, RLIMIT_NPROC (`prlimit --nproc`, which Linux does not
                   enforce for root); a root grader with neither is left the notebook's
                   time limit, which ends the whole PID namespace

The kernel inside reaches the grader only through Unix socket files in `work` (ZeroMQ's
``ipc`` transport: no network is needed) and through the pipes the grader gave it as stdin,
stdout and stderr. `mode("auto")` says whether bwrap works here, and refuses with a sentence
that says how to install it otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

MODES = ("auto", "bwrap", "none")
PROCESSES = 512  # tasks at once per submission: a kernel runs ~40 threads (torch's pool,
# ZeroMQ, IPython), more on a machine with many cores; a fork bomb stops here
CGROUPS = ("/sys/fs/cgroup/pids", "/sys/fs/cgroup")  # cgroup v1's pids controller; v2's root
MEMORY = 8 * 2**30  # address space per process: torch's import maps ~2 GiB of it, Exercise E's
# runs ~3 GiB; a submission that allocates past this fails its cell, not the grader's machine
ETC = (  # what of /etc a Python kernel reads: the loader, users and groups, time, fonts
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "fonts",
    "alternatives",
    "mime.types",
)
ENV_ALLOWED = (  # variables a submission's processes keep; CPU paths, so the numbers match
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "ONEDNN_MAX_CPU_ISA",
    "ATEN_CPU_CAPABILITY",
    "PYTHONHASHSEED",
)
INSTALL_HINT = (
    "install bubblewrap (Debian and Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf "
    "install bubblewrap`), or pass `--sandbox none` to grade without one (the grades are "
    "then only as trustworthy as the submissions)"
)
UNTRUSTED = (
    "graded without a sandbox (--sandbox none): the grades are only as trustworthy as the "
    "submissions"
)


def readable() -> list[str]:
    """The folders a submission's Python needs to read: its install, the environment, labkit."""
    import labkit

    found = {sys.base_prefix, sys.prefix, str(Path(labkit.__file__).resolve().parent)}
    exe = Path(sys.executable)
    found |= {str(exe.parent), str(exe.resolve().parent.parent)}
    return sorted(p for p in found if os.path.isdir(p) and not p.startswith("/usr/"))


def allowed_env(extra: dict) -> dict:
    """The sandbox's environment: the allow-list's variables that are set here, then `extra`."""
    path = os.pathsep.join((str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"))
    env = {k: os.environ[k] for k in ENV_ALLOWED if k in os.environ}
    return {"PATH": path, **env, **extra}


def bwrap_command(
    command: list, *, work: str, env: dict, memory: int = MEMORY, processes: int = PROCESSES
) -> list[str]:
    """`command` as it runs in the sandbox: `work` writable (and its working folder), the
    system and `readable()` read-only, `env` its whole environment, at most `processes`
    tasks at once (`process_limit`; `release(work)` afterwards)."""
    line = [*process_limit(work, processes), "prlimit", f"--as={int(memory)}"]
    if os.geteuid() != 0 and not line[0].startswith("/bin/sh"):  # no cgroup: the user's limit
        line.append(f"--nproc={_own_processes() + int(processes)}")
    line += ["--", shutil.which("bwrap") or "bwrap"]
    for top in ("usr", "bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        p = f"/{top}"
        if os.path.islink(p):
            line += ["--symlink", os.readlink(p), p]
        elif os.path.isdir(p):
            line += ["--ro-bind", p, p]
    for name in ETC:
        if os.path.exists(f"/etc/{name}"):
            line += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    # the private /tmp first: a checkout or an environment under /tmp (a CI clone) is bound
    # over it afterwards, read-only, instead of being hidden by it
    line += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    for p in readable():
        line += ["--ro-bind", p, p]
    line += ["--bind", work, work, "--chdir", work]
    line += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    line += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    line += ["--clearenv"]
    for k, v in env.items():
        line += ["--setenv", k, v]
    return [*line, "--", *command]


def process_limit(work: str, processes: int) -> list[str]:
    """The start of a command line that puts what follows in a cgroup of its own, named for
    `work`, holding at most `processes` tasks; [] where no pids cgroup can be made here."""
    for root in CGROUPS:
        if not _pids_here(root):
            continue
        group = _group(root, work)
        try:
            os.makedirs(group, exist_ok=True)  # a kernel started again reuses it
            with open(os.path.join(group, "pids.max"), "w") as f:
                f.write(str(int(processes)))
        except OSError:
            release(work)
            continue
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', group]
    return []


def limits_processes() -> str | None:
    """How a submission's processes are bounded here, in words; None where only the
    notebook's time limit ends a fork bomb (a root grader with no pids cgroup)."""
    if any(_pids_here(root) for root in CGROUPS):
        return "a pids cgroup per submission"
    return None if os.geteuid() == 0 else "RLIMIT_NPROC (prlimit --nproc)"


def _pids_here(root: str) -> bool:
    if root.endswith("/pids"):
        return os.access(root, os.W_OK)
    try:
        with open(os.path.join(root, "cgroup.subtree_control")) as f:
            return "pids" in f.read().split() and os.access(root, os.W_OK)
    except OSError:
        return False


def _group(root: str, work: str) -> str:
    import hashlib

    return os.path.join(
        root, "labkit-" + hashlib.sha1(os.path.abspath(work).encode()).hexdigest()[:16]
    )


def release(work: str) -> None:
    """Remove the cgroup `process_limit` made for `work`, once its last task is gone."""
    import time

    for root in CGROUPS:
        group = _group(root, work)
        for _ in range(20):
            try:
                os.rmdir(group)
            except FileNotFoundError:
                break
            except OSError:  # a task still ending: the namespace's last processes
                time.sleep(0.05)
            else:
                break


def _own_processes() -> int:
    """How many tasks this user runs now (RLIMIT_NPROC counts them all)."""
    uid, n = os.getuid(), 0
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == uid:
                n += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    return n


def works() -> str | None:
    """None where bwrap runs a process in the sandbox here; else why not, in words."""
    if sys.platform != "linux":
        return f"bubblewrap runs on Linux only, and this is {sys.platform}"
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed"
    import tempfile

    work = tempfile.mkdtemp(prefix="labkit-sandbox-")
    try:
        line = bwrap_command(["true"], work=work, env=allowed_env({}))
        done = subprocess.run(line, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start ({type(exc).__name__})"
    finally:
        release(work)
        shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1][:160]
        return (
            f"bwrap is installed but cannot make a sandbox here ({said}); where unprivileged "
            "user namespaces are restricted (Ubuntu 24.04's AppArmor), allow them with "
            "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
        )
    return None


def mode(given: str) -> str:
    """The sandbox to grade in, "bwrap" or "none", for ``--sandbox given``; ValueError, with
    how to install bwrap, where "auto" or "bwrap" is asked for and bwrap does not work here."""
    from ...errors import check_choice

    check_choice("--sandbox", given, MODES)
    if given == "none":
        return "none"
    why = works()
    if why is not None:
        raise ValueError(
            f"--sandbox={given} needs bubblewrap, and {why}, so nothing was graded; {INSTALL_HINT}."
        )
    return "bwrap"
