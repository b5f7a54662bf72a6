#!/usr/bin/env bash
# Installs what SexpGPU needs to build and test on Debian 12 (as root).
# Every dependency of the build and the binary is a Debian package; only the
# test peers of --tests below come from PyPI.
# libjs-dygraphs is the charting library `sexpgpu report` inlines into its
# pages. --tests adds the test peers: python3-torch (PyTorch 1.13, whose
# numbers torch-parity compares with, and whose torchrun starts the ranks
# test's processes); chromium and chromium-driver, the browser the report
# test opens pages in; and the PyPI peers in one venv the tests share
# (Debian's python is externally managed), /opt/sexpgpu-test/venv, made once
# and added to: selenium drives chromium, pillow reads its screenshots.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates \
  libspdlog-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev \
  libboost-dev libboost-filesystem-dev catch2 libcli11-dev \
  libopenblas-dev zlib1g-dev libcurl4-openssl-dev libedit-dev jq libgloo-dev \
  dataset-fashion-mnist fortunes libjs-dygraphs
if [ "${1:-}" = "--tests" ]; then
  apt-get install -y -qq --no-install-recommends python3-torch python3-venv chromium chromium-driver
  TEST_VENV=/opt/sexpgpu-test/venv
  [ -x "$TEST_VENV/bin/python" ] || /usr/bin/python3 -m venv "$TEST_VENV"
  "$TEST_VENV/bin/pip" install -q --disable-pip-version-check selenium pillow
fi
