#!/bin/sh
# `make lab` and `make test` start here: make VENV with a Python that labkit supports (3.11 or
# newer), or say in one line what is missing and exit 2.
#
#   sh tools/venv.sh VENV [PYTHON]
#
# PYTHON is the interpreter to use (`make lab PYTHON=python3.12`). Without it, the first of
# python3, python3.12, python3.11, python3.13 and python3.14 that is 3.11 or newer: a machine
# whose python3 is older (Ubuntu 22.04's is 3.10) often has a newer one beside it.
# A VENV that cannot work is made again: one left without pip (`venv` stops half-way on
# Debian/Ubuntu when the pythonX.Y-venv package is missing), one made with an older Python,
# or one whose interpreter is gone (a Homebrew upgrade removes the Python it linked to).
set -u
venv=$1
want=${2:-}

supported() {  # $1 is Python 3.11 or newer
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}
version() {  # $1's version, or "missing"
    "$1" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || echo "missing"
}

if [ -x "$venv/bin/python" ] && supported "$venv/bin/python" \
        && "$venv/bin/python" -c 'import pip' >/dev/null 2>&1; then
    exit 0
fi
if [ -e "$venv" ] || [ -L "$venv/bin/python" ]; then
    if [ -x "$venv/bin/python" ]; then
        echo "labkit: $venv cannot be used (Python $(version "$venv/bin/python"), pip" \
             "$("$venv/bin/python" -c 'import pip' >/dev/null 2>&1 && echo present || echo missing)):" \
             "making it again."
    else
        echo "labkit: $venv has no working Python (its interpreter is missing): making it again."
    fi
    rm -rf "$venv"
fi

if [ -n "$want" ]; then
    if ! command -v "$want" >/dev/null 2>&1 || [ "$(version "$want")" = missing ]; then
        echo "labkit: PYTHON=$want (from the make command line or your environment) was not" \
             "found, or did not run; name a Python 3.11 or newer, for example make lab PYTHON=python3.12." >&2
        exit 2
    fi
    if ! supported "$want"; then
        echo "labkit: PYTHON=$want (from the make command line or your environment) is Python" \
             "$(version "$want"); labkit needs 3.11 or newer, for example make lab PYTHON=python3.12." >&2
        exit 2
    fi
    python=$want
else
    python=
    for candidate in python3 python3.12 python3.11 python3.13 python3.14; do
        if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then
            python=$candidate
            break
        fi
    done
    if [ -z "$python" ]; then
        echo "labkit: labkit needs Python 3.11 or newer, and none is on PATH (python3 is" \
             "$(version python3)). Install one (Debian/Ubuntu: apt-get install python3.11" \
             "python3.11-venv; macOS: brew install python@3.12), or name it:" \
             "make lab PYTHON=/path/to/python3.12." >&2
        exit 2
    fi
fi

short=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "labkit: creating $venv with $python (Python $(version "$python"))."
if ! "$python" -m venv "$venv" || ! "$venv/bin/python" -c 'import pip' >/dev/null 2>&1; then
    rm -rf "$venv"
    echo "labkit: $python could not make $venv with pip in it (its own message is above). On" \
         "Debian/Ubuntu, venv is a package of its own: apt-get install python$short-venv," \
         "then run make again." >&2
    exit 2
fi
