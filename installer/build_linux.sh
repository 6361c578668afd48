#!/usr/bin/env bash
# Build the Linux installer: the one-folder bundle (PyInstaller) and a .deb around it.
#
#   installer/build_linux.sh            set up (./setup.sh install), build, check, package, measure
#   installer/build_linux.sh --test     ... then run the smoke tests against the bundle and
#                                       install/purge the .deb here (root; see docs/INSTALLER.md)
#
# Options: --no-setup (use the existing .venv and models as they are), --no-bench,
#          --compression zstd|xz|gzip (default zstd).
# Outputs: dist/preflight/ (bundle), dist/preflight_<version>_<arch>.deb,
#          build/installer-metrics.json (sizes, build time, start-up medians).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"

SETUP=1 BENCH=1 TEST=0 COMPRESSION=zstd
while (($#)); do
    case "$1" in
        --no-setup) SETUP=0 ;;
        --no-bench) BENCH=0 ;;
        --test) TEST=1 ;;
        --compression) COMPRESSION=$2; shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

say() { printf '\033[1m[build]\033[0m %s\n' "$*"; }
die() { printf '[build] error: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

[ "$(uname -s)" = Linux ] || die "this script builds the Linux package; see docs/INSTALLER.md for Windows and macOS"
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (a Debian/Ubuntu system is needed for the .deb)"
command -v objdump >/dev/null || die "objdump is missing: apt-get install binutils"

# 1. Environment and default models: the same set-up as the app (idempotent, fast when done).
if ((SETUP)); then
    say "set-up: ./setup.sh install (virtual environment, dependencies, default models)"
    ./setup.sh install
fi
[ -x "$VPY" ] || die "no virtual environment in .venv: run ./setup.sh install first"
"$VPY" -c "import PyInstaller" 2>/dev/null || die "PyInstaller missing: .venv/bin/pip install -e '.[package]'"

VERSION=$("$VPY" -c "import tomllib;print(tomllib.load(open('pyproject.toml','rb'))['project']['version'])")
say "Preflight $VERSION"

# 2. Icons for every format, from resources/icons/*.svg.
QT_QPA_PLATFORM=offscreen "$VPY" installer/make_icons.py --out build/icons

# 3. The bundle.
say "PyInstaller: building the one-folder bundle (several minutes)"
t0=$(now)
"$VPY" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller installer/preflight.spec
BUNDLE_SECONDS=$(elapsed "$t0")
say "bundle built in ${BUNDLE_SECONDS} s"

# 4. Does every library and model load inside it? (offline; fails the build if not)
say "bundle self-check"
env -u PREFLIGHT_MODELS_DIR PREFLIGHT_HOME="$(mktemp -d)" QT_QPA_PLATFORM=offscreen \
    dist/preflight/preflight --bundle-check

# 5. The .deb.
say "packaging the .deb ($COMPRESSION)"
t1=$(now)
"$VPY" installer/linux/build_deb.py --bundle dist/preflight --out dist --icons build/icons \
    --compression "$COMPRESSION" --json build/installer-deb.json
DEB_SECONDS=$(elapsed "$t1")

# 6. Measurements.
if ((BENCH)); then
    say "measuring start-up (medians)"
    "$VPY" installer/bench_bundle.py --bundle dist/preflight --runs 5 --json build/installer-bench.json
fi
"$VPY" - "$BUNDLE_SECONDS" "$DEB_SECONDS" <<'EOF'
import json, sys
from pathlib import Path
deb = json.loads(Path("build/installer-deb.json").read_text())
bench = Path("build/installer-bench.json")
metrics = {"version": deb["version"], "bundle_build_s": float(sys.argv[1]),
           "deb_build_s": float(sys.argv[2]), "deb": deb["deb"], "deb_bytes": deb["deb_bytes"],
           "installed_kib": deb["installed_kib"], "depends": deb["depends"],
           "bench": json.loads(bench.read_text()) if bench.exists() else None}
Path("build/installer-metrics.json").write_text(json.dumps(metrics, indent=2))
print(f"[build] {deb['deb']}: {deb['deb_bytes']/2**20:.0f} MiB "
      f"(installed {deb['installed_kib']/1024:.0f} MiB); bundle {sys.argv[1]} s + deb {sys.argv[2]} s")
EOF

# 7. Optional: tests/installer in one run: smoke tests against the bundle (offline), the
#    .deb's contents, and a real install/run/purge of the .deb (needs root; skipped without,
#    failed under CI=true).
if ((TEST)); then
    say "tests/installer: bundle smoke tests, .deb contents, install/purge of the .deb"
    PREFLIGHT_TEST_DEB_INSTALL=1 QT_QPA_PLATFORM=offscreen \
        "$VPY" -m pytest -q tests/installer -p no:cacheprovider
fi
say "done: dist/preflight_${VERSION}_$(dpkg --print-architecture).deb"
