#!/usr/bin/env bash
# Build the macOS app and disk image: Preflight.app (the same PyInstaller spec, which adds a
# BUNDLE step on macOS) inside dist/Preflight-<version>.dmg with an /Applications link.
#
#   installer/macos/build_dmg.sh
#
# Needs: macOS 12+, Python 3.11 (python3.11 on PATH), Xcode command-line tools (llama.cpp
# compiles with Metal), cmake. Optional signing: PREFLIGHT_CODESIGN_IDENTITY="Developer ID
# Application: ..." signs the app; PREFLIGHT_NOTARY_PROFILE=<notarytool keychain profile>
# also notarizes and staples the dmg.
# NOT RUN in this repository's CI, which is Linux-only: untested (docs/INSTALLER.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(uname -s)" = Darwin ] || { echo "run this on macOS" >&2; exit 1; }

./setup.sh install            # venv, dependencies, default models (skips the Debian part)
VPY=.venv/bin/python
VERSION=$("$VPY" -c "import tomllib;print(tomllib.load(open('pyproject.toml','rb'))['project']['version'])")

"$VPY" installer/make_icons.py --out build/icons          # build/icons/preflight.icns
"$VPY" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller installer/preflight.spec
APP=dist/Preflight.app
QT_QPA_PLATFORM=offscreen "$APP/Contents/MacOS/preflight" --bundle-check

if [ -n "${PREFLIGHT_CODESIGN_IDENTITY:-}" ]; then
    codesign --force --deep --options runtime --timestamp \
        --sign "$PREFLIGHT_CODESIGN_IDENTITY" "$APP"
fi

STAGE=$(mktemp -d)
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
DMG="dist/Preflight-$VERSION.dmg"
rm -f "$DMG"
hdiutil create -volname "Preflight $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$DMG"
rm -rf "$STAGE"

if [ -n "${PREFLIGHT_NOTARY_PROFILE:-}" ]; then
    xcrun notarytool submit "$DMG" --keychain-profile "$PREFLIGHT_NOTARY_PROFILE" --wait
    xcrun stapler staple "$DMG"
fi
ls -l "$DMG"
