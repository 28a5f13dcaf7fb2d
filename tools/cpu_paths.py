"""The CPU paths labkit's checks are run under: one machine showing the numbers of others.

torch's CPU wheel computes with three libraries, and each picks its own code path per CPU:
ATen's own kernels (`ATEN_CPU_CAPABILITY`), MKL's matrix products (`MKL_CBWR`), oneDNN's
low-precision kernels, fp16 autocast among them (`ONEDNN_MAX_CPU_ISA`); the thread count is a
fourth axis. Each variable below was seen to change the bits of a small training run on an
Intel Xeon with AVX-512 and AMX (docs/developer/portability.md has the table).

    python tools/cpu_paths.py portable     # prints VAR=VALUE ... (the Makefile's pass 2 uses it)
    python tools/cpu_paths.py --list       # every path, one line each
"""

from __future__ import annotations

import sys

# name -> (environment, what it stands for)
PATHS = {
    "native": ({}, "this machine's own path: the best ATen kernels, MKL's and oneDNN's own choice"),
    "portable": (
        {
            "ATEN_CPU_CAPABILITY": "default",
            "MKL_CBWR": "COMPATIBLE",
            "ONEDNN_MAX_CPU_ISA": "SSE41",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        },
        (
            "the same bits on every x86 CPU: ATen's portable kernels, MKL's COMPATIBLE mode "
            "(the one mode MKL keeps on non-Intel CPUs too), oneDNN capped at SSE4.1, one thread"
        ),
    ),
    "avx2": (
        {
            "ATEN_CPU_CAPABILITY": "avx2",
            "MKL_CBWR": "AVX2",
            "ONEDNN_MAX_CPU_ISA": "AVX2",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        },
        "an AVX2 laptop or runner (no AVX-512): every library on its AVX2 kernels",
    ),
    "amd-2threads": (
        {
            "ATEN_CPU_CAPABILITY": "avx512",
            "MKL_CBWR": "AVX2",
            "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16",
            "OMP_NUM_THREADS": "2",
            "MKL_NUM_THREADS": "2",
        },
        (
            "an AMD with AVX-512 (Zen 4) on a runner that gives each worker two threads: ATen on "
            "AVX-512, MKL on its AVX2 kernels (its path on AMD), oneDNN without AMX or fp16"
        ),
    ),
}


def env_words(name: str) -> str:
    return " ".join(f"{k}={v}" for k, v in PATHS[name][0].items())


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        for name, (env, what) in PATHS.items():
            print(
                f"{name:13s} {' '.join(f'{k}={v}' for k, v in env.items()) or '(nothing set)'}: {what}"
            )
        return 0
    if len(argv) != 1 or argv[0] not in PATHS:
        print(
            f"cpu_paths.py: give one path name ({', '.join(PATHS)}) or --list; got {' '.join(argv) or 'nothing'}",
            file=sys.stderr,
        )
        return 2
    print(env_words(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
