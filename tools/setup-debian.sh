#!/usr/bin/env bash
# Installs fusor's build and test dependencies on Debian 12 (the CUDA toolkit
# itself is expected in /usr/local/cuda). Idempotent; needs root or sudo.
set -euo pipefail
pkgs=(cmake g++ make catch2 nlohmann-json3-dev zlib1g-dev libbenchmark-dev libeigen3-dev libopenblas-dev libsleef-dev
      libdnnl-dev)  # oneDNN: a benchmark peer (bench_layers), not a dependency of fusor
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# (nvcc needs no PATH entry: fusor's CMakeLists.txt looks in /usr/local/cuda/bin itself.)
