"""The suite's warm kernels (tests/warm_kernels.py): a forked kernel behaves as a fresh one
where a notebook could tell, and a launch the zygote cannot serve is started cold."""

import json
import os
import signal
import sys
import time

import pytest
from jupyter_client.manager import start_new_kernel

import warm_kernels

pytestmark = [
    pytest.mark.skipif(warm_kernels.ZYGOTE is None, reason="warm kernels need pidfds (Linux 5.3+)"),
    pytest.mark.skipif(
        warm_kernels.cold_asked(), reason="LABKIT_TEST_COLD_KERNELS=1: every kernel starts cold"
    ),
]

PROBE = (
    "import json, os, sys, torch, matplotlib, matplotlib.pyplot as plt\n"
    "print(json.dumps({'ppid': os.getppid(), 'leader': os.getpgid(0) == os.getpid(),\n"
    "                  'cwd': os.getcwd(), 'probe': os.environ.get('WARM_PROBE'), 'path': sys.path,\n"
    "                  'argv': sys.argv[1:2], 'draw': torch.rand(1).item(),\n"
    "                  'backend': matplotlib.get_backend(), 'mplconfig': matplotlib.get_configdir(),\n"
    "                  'figures': plt.get_fignums()}))"
)


def _probe(cwd, **env):
    """Start a kernel in `cwd` with these variables added, run PROBE, and read it back."""
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(cwd), env={**os.environ, **env})
    out = []
    try:
        kc.execute_interactive(
            PROBE,
            timeout=60,
            output_hook=lambda msg: (
                out.append(msg["content"]["text"]) if msg["msg_type"] == "stream" else None
            ),
        )
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return json.loads("".join(out))


def test_a_kernel_forked_warm_is_as_a_fresh_one_started_in_its_folder(tmp_path, monkeypatch):
    warm = [_probe(tmp_path, WARM_PROBE="seen") for _ in range(2)]
    monkeypatch.setenv("LABKIT_TEST_COLD_KERNELS", "1")
    cold = _probe(tmp_path, WARM_PROBE="seen")
    assert cold["ppid"] == os.getpid()  # jupyter_client's own Popen
    for kernel in warm:
        assert kernel["ppid"] == warm_kernels.ZYGOTE._proc.pid != os.getpid()  # forked
        # its own session, folder, ..., and the matplotlib the zygote imported, as a fresh import
        for key in ("leader", "cwd", "probe", "path", "argv", "backend", "mplconfig", "figures"):
            assert kernel[key] == cold[key], key
    assert cold["leader"] and cold["cwd"] == str(tmp_path) and cold["probe"] == "seen"
    assert warm[0]["draw"] != warm[1]["draw"]  # torch seeded afresh in each, as in a fresh process


def test_a_launch_that_sets_a_thread_count_of_its_own_is_started_cold(tmp_path):
    threads = "3" if os.environ.get("OMP_NUM_THREADS") != "3" else "2"
    kernel = _probe(tmp_path, OMP_NUM_THREADS=threads)
    assert kernel["ppid"] == os.getpid() and kernel["cwd"] == str(
        tmp_path
    )  # jupyter_client's Popen


def test_a_launch_that_reads_matplotlib_settings_of_its_own_is_started_cold(tmp_path):
    """matplotlib reads MPL* while it is imported, and the zygote imported it: a kernel given
    another MPLCONFIGDIR or MPLBACKEND is not served warm (asked without starting one)."""
    zygote, cmd = warm_kernels.ZYGOTE, [sys.executable, "-m", "ipykernel_launcher", "-f", "x.json"]
    assert zygote.serves(cmd, dict(os.environ), {})
    assert not zygote.serves(cmd, {**os.environ, "MPLCONFIGDIR": str(tmp_path)}, {})
    assert not zygote.serves(cmd, {**os.environ, "MPLBACKEND": "svg"}, {})


def test_a_closed_zygote_leaves_no_folder_behind():
    zygote = warm_kernels.Zygote()
    assert zygote.started()
    folder = os.path.dirname(zygote._path)
    assert os.path.exists(os.path.join(folder, "socket"))
    zygote.close()
    assert not os.path.exists(folder) and zygote._proc.returncode is not None


def test_a_warm_kernel_is_interrupted_and_killed_through_its_own_process_group():
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        assert isinstance(km.provisioner.process, warm_kernels.ForkedKernel)
        assert km.provisioner.pgid == km.provisioner.pid != os.getpgid(0)
        kc.execute("import time; time.sleep(60)")
        time.sleep(1)
        km.interrupt_kernel()  # SIGINT to its group only: this process would die of it
        reply = kc.get_shell_msg(timeout=30)
        assert (
            reply["content"]["status"] == "error"
            and reply["content"]["ename"] == "KeyboardInterrupt"
        )
        km.provisioner.process.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not km.is_alive() and km.provisioner.process.returncode == -signal.SIGKILL
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


CLIENT = """
import json, os, sys
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3")
out = []
kc.execute_interactive("import os; print(os.getpid(), os.getppid())", timeout=60,
                       output_hook=lambda m: out.append(m["content"].get("text", "")))
print(json.dumps({"kernel": [int(v) for v in "".join(out).split()], "argv": sys.argv[1:]}), flush=True)
os._exit(0)  # gone without shutting its kernel down
"""


def test_a_test_subprocess_gets_its_kernels_from_the_worker_zygote_and_they_end_with_it(tmp_path):
    """`command` + `client_env`: the JupyterLab server of the browser tests, and `labkit grade`
    where a test reads its rows, start their kernels this way."""
    import subprocess

    (tmp_path / "client_probe.py").write_text(CLIENT)
    out = subprocess.run(
        warm_kernels.command("client_probe", "--flag"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **warm_kernels.client_env()},
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[-1])
    pid, ppid = seen["kernel"]
    assert ppid == warm_kernels.ZYGOTE.pid and seen["argv"] == ["--flag"]
    deadline = time.monotonic() + 10  # the client is gone: its kernel goes too
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")
