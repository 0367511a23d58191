#!/usr/bin/env bash
# Installs TraceSmith's build and test dependencies from Debian/Ubuntu packages.
# Idempotent: packages already present are skipped quickly.
#   --test   also what only the test command needs: headless Chromium and node,
#            which load `tracesmith report` pages (tests/report/browser_test.cc,
#            html_report_test.cc), and ccache, through which the asan build
#            takes the test programs' objects the release build compiled
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ pkg-config
  libzstd-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev zlib1g-dev
  libdw-dev libelf-dev
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev llvm        # libFuzzer targets, XRay import tests
  protobuf-compiler                    # decodes exported Perfetto traces in tests
  python3-dev                          # embedded-interpreter stack tests, Python package
  pybind11-dev python3-numpy           # the tracesmith Python package (src/python)
  python3-pytest python3-pandas        # its tests (tests/python)
  python3-setuptools python3-venv      # pip install --no-build-isolation . (offline)
  clang-format-14                      # scripts/test.sh checks the formatting (the repo's version)
  lld                                  # faster links (used when present)
)
if [ "${1:-}" = --test ]; then
  PACKAGES+=(chromium nodejs)          # the report page in a real browser, its script under node
  PACKAGES+=(ccache)                   # the test units compiled once for two builds (docs/testing.md)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
