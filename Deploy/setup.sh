#!/usr/bin/env bash
# Installs what Klaxon needs on Debian/Ubuntu, and nothing else:
#   Deploy/setup.sh          what building and running need
#   Deploy/setup.sh --test   that, plus what the test suite needs
# Idempotent: when every package is present it says so in one line and does nothing (no apt-get
# update, no sudo).
set -euo pipefail

# Building and running:
# libcurl4-openssl-dev: SMTP through libcurl (the CCurl module's pkg-config); libsqlite3-dev: the
# SQLite store (GRDB links the system's SQLite); libssl-dev: what libcurl's headers build against.
# librsvg2-2: the status site's charts as PNG (librsvg and cairo, loaded at the first render:
# KlaxonServer/Site/Charts/RsvgLibrary.swift; the build needs no header of them); fonts-dejavu-core:
# the charts' text (without any font, librsvg draws text as nothing).
packages=(libcurl4-openssl-dev libsqlite3-dev libssl-dev librsvg2-2 fonts-dejavu-core)

# The tests only:
# chromium: the headless browser the status site's tests drive (KlaxonTesting/HeadlessBrowser.swift).
# postgresql: the server binaries (initdb, postgres) of the store conformance tests' throw-away server
# (KlaxonTesting/PostgresServer.swift); the tests start their own, so Debian's cluster is not needed.
# python3-aiosmtpd: the test SMTP server (KlaxonTesting/SMTPServer.swift); openssl: the TLS
# certificates of the delivery tests. prometheus: `promtool check metrics` on /metrics;
# prometheus-alertmanager: `amtool` against the Alertmanager API.
test_packages=(chromium postgresql python3-aiosmtpd openssl prometheus prometheus-alertmanager)

case "${1:-}" in
    "") ;;
    --test) packages+=("${test_packages[@]}") ;;
    -h | --help)
        echo "usage: Deploy/setup.sh [--test]"
        exit 0
        ;;
    *)
        echo "usage: Deploy/setup.sh [--test]" >&2
        exit 64
        ;;
esac

missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$pkg")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all present (${packages[*]})"
    exit 0
fi

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "setup: need root or sudo to install: ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
