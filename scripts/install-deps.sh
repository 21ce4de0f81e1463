#!/bin/sh
# Installs the Debian packages p3dtrace needs to build and test, if missing.
# Safe to run repeatedly: it only calls apt-get when something is absent.
set -eu
need=""
for pkg in build-essential libcmocka-dev libunwind-dev pkg-config python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
if [ -n "$need" ]; then
    echo "p3dtrace: installing:$need"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
