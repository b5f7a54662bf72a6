#!/bin/bash
# Fills .devdeps/ (ignored by git) with what bench/device-run.sh needs on the
# GPU machine, which has no network: the Debian packages it lacks (TOML++,
# its library, CLI11 and zlib headers, OpenBLAS and its Fortran runtime, OpenSSL's
# libcrypto (bundles need it), Gloo and
# what it links; unpacked there
# with dpkg -x, never into /) and the examples' data (Fashion-MNIST, the
# fortunes charlm reads). Run here, as root, from the repository root; then
# name .devdeps in the device tool's `carry`.
set -eu
mkdir -p .devdeps/debs .devdeps/data/fashion-mnist .devdeps/data/fortunes
(cd .devdeps/debs && apt-get download libtomlplusplus-dev libtomlplusplus3 libcli11-dev zlib1g-dev \
  libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 libquadmath0 \
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200 \
  libssl-dev libssl3)
cp /usr/share/datasets/fashion-mnist/*.gz .devdeps/data/fashion-mnist/
for f in cookie computers definitions people; do
  cp /usr/share/games/fortunes/$f .devdeps/data/fortunes/
done
grep -qx '/.devdeps/' .git/info/exclude || echo '/.devdeps/' >> .git/info/exclude
du -sh .devdeps
