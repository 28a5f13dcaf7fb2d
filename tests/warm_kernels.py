"""Warm kernels for the test suite: a kernel forked from a process that has imported torch.

Every notebook the suite executes (nbval, papermill, nbclient) starts a real ipykernel, and
each fresh kernel spends about 3 s of CPU importing torch, then torch._dynamo (which the
first `optimizer.step()` imports), and about 0.5 s more importing matplotlib: over a third of
a kernel's work in the short notebooks here, and `make test` starts some 90 such kernels in
its own processes (69 in pass 1, seen; 21 in pass 2). So each pytest worker keeps one
*zygote*: a process that made those imports once, started on the worker's first kernel
(ipykernel is imported after the fork: it reads $JPY_PARENT_PID while it is imported). The
zygote then freezes what it imported out of the garbage collector's sight (`gc.freeze`): a
kernel's collections would otherwise walk those objects and copy every page they touch
(a trivial kernel: 0.36 s of CPU with matplotlib imported unfrozen, 0.19 s frozen). A
kernel launch that the zygote can serve is forked from it; the child becomes a new session,
takes the launch's environment, working folder and standard streams, and runs
`python -m ipykernel_launcher -f <connection file>` as a fresh process would. nbval,
papermill and nbclient then talk to it over ZeroMQ as to any kernel: the kernel, its
messages and every check on its outputs are real; only the imports were done before the fork.

A launch is served cold (jupyter_client's own `launch_kernel`, unchanged) whenever the warm
path could differ from a fresh process:
- the command is not `<this Python> -m ipykernel_launcher ...`, or wants a pipe to its
  standard streams, or stdin, or to outlive this process (`independent`);
- a variable read while torch, matplotlib or Python start (OMP_*, MKL_*, ATEN_*, TORCH*,
  MPL*, PYTHON*, LD_*, ...) differs from the zygote's: the portable pass starts its own
  zygote in its own workers, with ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1;
- the platform has no pidfd (not Linux), or LABKIT_TEST_COLD_KERNELS=1 is set.

A test's own subprocess that starts kernels (the JupyterLab server of the browser tests, a
`labkit grade` whose rows a test reads) can be started with `command(module, args)` and
`client_env()`: it then asks its worker's zygote for each kernel, under the same rules. Such a
kernel also ends when the process that asked for it ends, as a fresh kernel does when its
parent goes. Nothing outside the tests uses this: `make lab` and `labkit grade` start kernels
as Jupyter does, and so do the tests about those commands themselves (`tools/lab.py`, the
instructor's workflow step).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

# Variables that a process reads while Python, torch or OpenMP start, or while matplotlib is
# imported: a kernel that sets one differently from the zygote is started cold.
STARTUP_VARS = (
    "OMP_",
    "MKL_",
    "KMP_",
    "GOMP_",
    "OPENBLAS_",
    "ATEN_",
    "TORCH",
    "PYTORCH",
    "PYTHON",
    "LD_",
    "CUDA",
    "NVIDIA",
    "MALLOC",
    "MPL",
)
# ... except one that torch writes into os.environ itself when it first needs it, and reads
# only when it compiles (torch._inductor's cache folder, derived from the user's name).
LATER_VARS = {"TORCHINDUCTOR_CACHE_DIR"}

# The zygote, run as `python -c SCRIPT <socket path>`.
SCRIPT = r"""
import ctypes, json, os, runpy, signal, socket, sys, traceback
ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG: go when the pytest worker goes
path = sys.argv[1]
import torch, torch._dynamo  # what every kernel here imports: torch, and optimizer.step()'s dynamo
import matplotlib.pyplot  # and most notebooks' plots (reads MPL* while it is imported: see STARTUP_VARS)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(64)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps each exited child
import threading
import gc
gc.freeze()
print(threading.active_count(), flush=True)  # ready; no Python thread but this one (OpenBLAS's
# idle pool, started by numpy, is shut down and restarted around a fork by OpenBLAS itself)
while True:
    conn, _ = server.accept()
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    request = json.loads(msg)
    if os.fork():
        for fd in fds:
            os.close(fd)
        conn.close()
        continue
    code = 1
    try:
        server.close()
        # As Popen(start_new_session=True): the kernel leads its own process group, before its
        # pid is given out (jupyter_client signals the group it reads from that pid).
        os.setsid()
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # and goes when the zygote goes
        conn.sendall(str(os.getpid()).encode())
        conn.close()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        if request.get("watch"):  # asked for by another process: go when it goes, as a
            import select, threading  # fresh kernel goes when its parent does

            def watch(pid=request["watch"]):
                try:
                    poller = select.poll()
                    poller.register(os.pidfd_open(pid), select.POLLIN)
                    poller.poll()
                finally:
                    os._exit(1)
            threading.Thread(target=watch, daemon=True).start()
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]  # as `python -m` puts the working folder first
        sys.argv = [request["module"], *request["args"]]
        torch.seed()  # seeded from the OS, as in a fresh process (Python's random is, by itself)
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            import atexit
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
"""


def _fd(stream, own: int, devnull: int) -> int | None:
    """The descriptor a Popen child gets for `stream`: this process's `own` for None, a file's
    or a number's own, `devnull` for DEVNULL; None for a pipe, which only a real child has."""
    if stream is None:
        return own
    if stream == subprocess.DEVNULL:
        return devnull
    if stream in (subprocess.PIPE, subprocess.STDOUT):
        return None
    return stream if isinstance(stream, int) else stream.fileno()


class ForkedKernel:
    """What jupyter_client's LocalProvisioner uses of a Popen, for a kernel forked by the
    zygote (not a child of this process: its end is seen through a pidfd)."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid, self.returncode, self._signal = pid, None, 0
        try:
            self._fd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # gone already
            self._fd, self.returncode = None, 0

    def _ended(self, timeout: float | None) -> bool:
        if self.returncode is not None:
            return True
        poller = select.poll()  # not select(): a worker may hold more than 1,024 descriptors
        poller.register(self._fd, select.POLLIN)
        if poller.poll(None if timeout is None else timeout * 1000):
            os.close(self._fd)
            self._fd, self.returncode = None, -self._signal if self._signal else 0
            return True
        return False

    def poll(self) -> int | None:
        self._ended(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended(timeout):
            raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return
            if sig in (signal.SIGKILL, signal.SIGTERM):
                self._signal = sig

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


SOCKET_VAR = "LABKIT_TEST_ZYGOTE"  # in a client's environment: {"path", "pid", "startup"}


def cold_asked() -> bool:
    """LABKIT_TEST_COLD_KERNELS=1: every kernel starts the usual way (a client inherits it too)."""
    return os.environ.get("LABKIT_TEST_COLD_KERNELS") == "1"


class Zygote:
    """One per pytest worker: started on the first warm launch. In a client (a subprocess a
    test started with `command`), the worker's, described by $LABKIT_TEST_ZYGOTE."""

    def __init__(self, client: dict | None = None):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._path = ""
        self._startup_env: dict = {}  # the zygote's STARTUP_VARS, to compare each launch with
        self.broken = False
        self.pid = 0
        self._client = client is not None
        if client is not None:
            self._path, self.pid, self._startup_env = (
                client["path"],
                client["pid"],
                client["startup"],
            )

    @staticmethod
    def _startup(env: dict) -> dict:
        return {k: v for k, v in env.items() if k.startswith(STARTUP_VARS) and k not in LATER_VARS}

    def _start(self) -> None:
        folder = tempfile.mkdtemp(prefix="labkit-zygote-")
        self._path = os.path.join(folder, "socket")
        env = dict(os.environ)
        self._startup_env = self._startup(env)
        self._proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, self._path],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )  # never in this process's group
        poller = select.poll()
        poller.register(self._proc.stdout, select.POLLIN)
        started = poller.poll(300_000)
        ready = self._proc.stdout.readline().strip() if started else b""
        if ready != b"1":  # it failed or hung, or an import left a Python thread running
            self._proc.kill()
            self.broken = True
        self.pid = self._proc.pid
        atexit.register(self.close)

    def started(self) -> bool:
        """Start the zygote now if it is not yet (a client can only use a running one)."""
        with self._lock:
            if self._proc is None and not self._client:
                self._start()
        return not self.broken

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._proc is not None:  # its socket's folder (a client's belongs to the worker)
            shutil.rmtree(os.path.dirname(self._path), ignore_errors=True)

    def serves(self, cmd: list, env: dict, kw: dict) -> bool:
        if self.broken or cold_asked():
            return False
        if kw.get("independent") or kw.get("stdin") is not None:
            return False
        if _fd(kw.get("stdout"), 1, 0) is None or _fd(kw.get("stderr"), 2, 0) is None:
            return False
        if set(kw) - {"independent", "stdin", "stdout", "stderr", "env", "cwd"}:
            return False
        if len(cmd) < 3 or cmd[1:3] != ["-m", "ipykernel_launcher"] or cmd[0] != sys.executable:
            return False
        return self.started() and self._startup(env) == self._startup_env

    def launch(self, cmd: list, env: dict, kw: dict) -> ForkedKernel:
        # as jupyter_client's launcher does (the kernel's own poller watches the zygote, its
        # parent; a client's kernel also watches the client: see `watch` in SCRIPT)
        env = {**env, "JPY_PARENT_PID": str(self.pid)}
        request = {
            "module": cmd[2],
            "args": cmd[3:],
            "env": env,
            "cwd": str(kw.get("cwd") or os.getcwd()),
            "watch": os.getpid() if self._client else 0,
        }
        with open(os.devnull, "rb+") as devnull, socket.socket(socket.AF_UNIX) as conn:
            fds = [
                devnull.fileno(),
                _fd(kw.get("stdout"), 1, devnull.fileno()),
                _fd(kw.get("stderr"), 2, devnull.fileno()),
            ]
            conn.connect(self._path)
            socket.send_fds(conn, [json.dumps(request).encode()], fds)
            conn.shutdown(socket.SHUT_WR)
            reply = b"".join(iter(lambda: conn.recv(64), b""))
        return ForkedKernel(int(reply))


ZYGOTE: Zygote | None = None  # this process's, once `install` ran


def install(client: bool = False) -> None:
    """Serve this process's kernel launches from a zygote where it can (see the module's
    docstring); a no-op where pidfds are missing or refused. `client`: from the worker's zygote
    that $LABKIT_TEST_ZYGOTE describes (a no-op without it)."""
    described = os.environ.get(SOCKET_VAR)
    if client and not described:
        return
    if not (hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")):
        return
    try:  # a kernel before Linux 5.3, or a sandbox that refuses the call
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return
    global ZYGOTE
    from jupyter_client.provisioning import local_provisioner

    cold = local_provisioner.launch_kernel
    zygote = ZYGOTE = Zygote(json.loads(described) if client else None)

    def launch_kernel(cmd, **kw):
        env = kw.get("env")
        env = dict(os.environ) if env is None else env
        if zygote.serves(list(cmd), env, kw):
            try:
                return zygote.launch(list(cmd), env, kw)
            except (OSError, ValueError):  # the zygote is gone: every launch from now on is cold
                zygote.broken = True
        return cold(cmd, **kw)

    local_provisioner.launch_kernel = launch_kernel


# Run as `python -c CLIENT MODULE ARGS...`: `python -m MODULE ARGS...` whose kernels come from
# the zygote in $LABKIT_TEST_ZYGOTE (this file's folder is appended to sys.path to import it).
CLIENT = r"""
import os, runpy, sys
sys.path.append(os.environ["LABKIT_TEST_WARM_PATH"])
import warm_kernels
warm_kernels.install(client=True)
module = sys.argv[1]
del sys.argv[1]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def command(module: str, *args: str) -> list[str]:
    """The command line of `python -m module args...` for a test's subprocess that starts kernels:
    run with `client_env()`, it asks this worker's zygote for them (see the module's docstring)."""
    return [sys.executable, "-c", CLIENT, module, *args]


def client_env() -> dict:
    """The variables that let a `command(...)` process use this worker's zygote; none (its
    kernels then start cold) where this process has no zygote, or it is broken or refused."""
    env = {"LABKIT_TEST_WARM_PATH": os.path.dirname(os.path.abspath(__file__))}
    if ZYGOTE is not None and not cold_asked() and ZYGOTE.started():
        env[SOCKET_VAR] = json.dumps(
            {"path": ZYGOTE._path, "pid": ZYGOTE.pid, "startup": ZYGOTE._startup_env}
        )
    return env
