#!/usr/bin/env bash
# Prepares a fresh Debian machine for Splice: finds the Swift toolchain and installs the Debian
# packages the build, the tests and the quick start need (only those that are missing). The tests
# also use promtool (package prometheus: it lints the metrics; on a host with systemd it installs a
# Prometheus service too, `systemctl disable --now prometheus` if you do not want it), headless
# chromium (the status page in a real browser), PyYAML (Deploy/check-deploy.py) and Python's
# jsonschema (docs/schema/transcode-request.json is validated against real requests).
# Safe to run any number of times. Sourced by quickstart.sh and test.sh; can also run alone.
set -euo pipefail

splice_packages=(
    pkg-config
    libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev
    libzmq3-dev libpq-dev postgresql ffmpeg
    prometheus chromium python3-yaml python3-jsonschema
)

splice_find_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin /usr/local/swift/usr/bin; do
            if [ -x "$dir/swift" ]; then
                export PATH="$dir:$PATH"
                break
            fi
        done
    fi
    if ! command -v swift >/dev/null 2>&1; then
        echo "setup: no Swift toolchain found. Install Swift 6.0 or newer from https://swift.org/install" >&2
        echo "       (or put its usr/bin on PATH) and run this again." >&2
        exit 1
    fi
}

splice_install_packages() {
    local missing=()
    for p in "${splice_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo="sudo"
        else
            echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
            exit 1
        fi
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

splice_find_swift
splice_install_packages
