#!/usr/bin/env bash
# Installs what zerosim builds with (Debian 12 packages), idempotently: apt runs only when something is missing.
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config git
      nlohmann-json3-dev libcli11-dev catch2 libsimgrid-dev libaio-dev libopenmpi-dev openmpi-bin
      libbenchmark-dev fio qt6-base-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev libgl-dev
      xvfb xauth fonts-dejavu-core jq python3 universal-ctags)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
