#!/usr/bin/env bash
# Installs what SexpGPU needs to build and test on Debian 12 (as root).
# Every dependency is a Debian package; nothing is downloaded from elsewhere.
# --tests adds the test peers: python3-torch (PyTorch 1.13, whose numbers
# torch-parity compares with, and whose torchrun starts the ranks test's
# processes).
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
  apt-get install -y -qq --no-install-recommends python3-torch
fi
