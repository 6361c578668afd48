# Build the Windows installer: one-folder bundle (PyInstaller) + Inno Setup setup.exe.
#
#   powershell -ExecutionPolicy Bypass -File installer\windows\build_windows.ps1
#
# Needs: Python 3.11 (x64) on PATH as `py -3.11`, Visual Studio Build Tools with the C++
# workload and CMake (llama-cpp-python compiles llama.cpp), Inno Setup 6 (iscc.exe on PATH
# or in its default folder). NOT RUN in this repository's CI, which is Linux-only: the
# steps mirror installer/build_linux.sh but are untested (docs/INSTALLER.md).
$ErrorActionPreference = "Stop"
Set-Location (Join-Path $PSScriptRoot "..\..")

if (-not (Test-Path ".venv\Scripts\python.exe")) { py -3.11 -m venv .venv }
$py = ".venv\Scripts\python.exe"
& $py -m pip install --upgrade "pip>=24" wheel
& $py -m pip install "torch==2.13.0"          # the CPU build: PyPI's Windows wheel is CPU-only
& $py -m pip install -c constraints.txt -e ".[package]"
& ".venv\Scripts\preflight.exe" models install  # default models, sha256-checked

$version = & $py -c "import tomllib;print(tomllib.load(open('pyproject.toml','rb'))['project']['version'])"
& $py installer\make_icons.py --out build\icons

$t0 = Get-Date
& $py -m PyInstaller --noconfirm --clean --log-level WARN --distpath dist --workpath build\pyinstaller installer\preflight.spec
if ($LASTEXITCODE -ne 0) { throw "PyInstaller failed" }
"bundle built in {0:N0} s" -f ((Get-Date) - $t0).TotalSeconds

$env:QT_QPA_PLATFORM = "offscreen"
& dist\preflight\preflight.exe --bundle-check
if ($LASTEXITCODE -ne 0) { throw "bundle self-check failed" }
Remove-Item Env:\QT_QPA_PLATFORM

$iscc = (Get-Command iscc.exe -ErrorAction SilentlyContinue).Source
if (-not $iscc) { $iscc = "${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe" }
& $iscc "/DAppVersion=$version" installer\windows\preflight.iss
if ($LASTEXITCODE -ne 0) { throw "Inno Setup failed" }
Get-Item "dist\Preflight-$version-setup.exe" | Select-Object Name, Length
