#!/usr/bin/env bash
# Installs what SexpGPU needs to build and test on Debian 12 (as root).
# Every dependency of the build is a Debian package; nothing else is
# downloaded for it. --tests adds the test peers: python3-torch (PyTorch
# 1.13, whose numbers torch-parity compares with, and whose torchrun starts
# the ranks test's processes), and moto, the S3-compatible server the s3
# test starts on 127.0.0.1: PyPI's moto[server] (it brings boto3), in a
# venv at /opt/sexpgpu-test/venv (Debian 12's python3 is externally
# managed), which tests/e2e/s3.sh finds there.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates \
  libspdlog-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev \
  libboost-dev libboost-filesystem-dev catch2 libcli11-dev \
  libopenblas-dev zlib1g-dev libcurl4-openssl-dev libssl-dev libedit-dev jq libgloo-dev \
  dataset-fashion-mnist fortunes
if [ "${1:-}" = "--tests" ]; then
  apt-get install -y -qq --no-install-recommends python3-torch python3-venv
  SEXPGPU_TEST_VENV=/opt/sexpgpu-test/venv
  if ! "$SEXPGPU_TEST_VENV/bin/python3" -c 'import moto.server, boto3' 2>/dev/null; then
    python3 -m venv "$SEXPGPU_TEST_VENV"
    "$SEXPGPU_TEST_VENV/bin/pip" install -q 'moto[server]'
  fi
fi
