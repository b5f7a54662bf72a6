#!/usr/bin/env bash
# Installs what SexpGPU needs to build and test on Debian 12 (as root).
# The build's dependencies and the binary's are Debian packages; only the
# test peers of --tests come from PyPI (in a venv, below).
# libprotobuf-dev and protobuf-compiler build the tensorboard sink (its
# CRC-32C is Boost.CRC's); libjs-dygraphs is the charting library `sexpgpu
# report` inlines into its pages.
# --tests adds the test peers: python3-torch (PyTorch 1.13, whose numbers
# torch-parity compares with, and whose torchrun starts the ranks test's
# processes); chromium and chromium-driver, the browser the report test
# opens pages in; and the PyPI peers in one venv the tests share (Debian's
# python3 is externally managed), /opt/sexpgpu-test/venv, made once and
# added to: moto[server] (the S3-compatible server the s3 test starts on
# 127.0.0.1; it brings boto3), tensorboard (its reader reads the sink's
# files back), selenium (drives chromium) and pillow (reads its screenshots).
# libssl-dev: OpenSSL's libcrypto, for SHA-256 and MD5 checks.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates \
  libspdlog-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev \
  libboost-dev libboost-filesystem-dev catch2 libcli11-dev \
  libopenblas-dev zlib1g-dev libcurl4-openssl-dev libssl-dev libedit-dev jq libgloo-dev \
  libprotobuf-dev protobuf-compiler \
  dataset-fashion-mnist fortunes libjs-dygraphs
if [ "${1:-}" = "--tests" ]; then
  apt-get install -y -qq --no-install-recommends python3-torch python3-venv chromium chromium-driver
  TEST_VENV=/opt/sexpgpu-test/venv
  [ -x "$TEST_VENV/bin/python3" ] || /usr/bin/python3 -m venv "$TEST_VENV"
  "$TEST_VENV/bin/python3" -m pip install -q --disable-pip-version-check \
    'moto[server]' tensorboard==2.21.0 selenium pillow
fi
