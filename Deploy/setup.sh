#!/usr/bin/env bash
# Installs what Klaxon needs to build and test on Debian/Ubuntu, and nothing else.
# Idempotent: when every package is present it does nothing (no apt-get update, no sudo).
set -euo pipefail

# chromium: the headless browser the status site's tests drive (KlaxonTesting/HeadlessBrowser.swift).
# postgresql: the server binaries (initdb, postgres) of the store conformance tests' throw-away server
# (KlaxonTesting/PostgresServer.swift); the tests start their own, so Debian's cluster is not needed.
# librsvg2-2: the status site's charts as PNG (librsvg and cairo, loaded at the first render:
# KlaxonServer/Site/Charts/RsvgLibrary.swift; the build needs no header of them); fonts-dejavu-core:
# the charts' text (without any font, librsvg draws text as nothing).
packages=(libcurl4-openssl-dev libsqlite3-dev libssl-dev python3-aiosmtpd openssl chromium postgresql
    librsvg2-2 fonts-dejavu-core)

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
