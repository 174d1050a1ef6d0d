#!/usr/bin/env bash
# Prepares a fresh Debian machine for Splice: finds the Swift toolchain and installs the Debian
# packages the build, the tests and the quick start need (only those that are missing). The tests
# also use promtool (package prometheus: it lints the metrics; on a host with systemd it installs a
# Prometheus service too, `systemctl disable --now prometheus` if you do not want it), headless
# chromium (the status page in a real browser) and PyYAML (Deploy/check-deploy.py). The
# object-storage tests and `splice-bench s3` run moto's S3 emulator and botocore's signer
# (Deploy/s3-emulator.py) from a virtual environment made here: .venv beside Package.swift, with
# the pinned PyPI packages below (python3-venv provides pip inside it).
# Safe to run any number of times. Sourced by quickstart.sh and test.sh; can also run alone.
set -euo pipefail

splice_packages=(
    pkg-config
    libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev
    libzmq3-dev libpq-dev libcurl4-openssl-dev postgresql ffmpeg
    prometheus chromium python3-yaml python3-venv
)

# The S3 emulator and the independent SigV4 signer, pinned so the oracle does not move under the tests.
splice_python_packages=("moto[server]==5.2.5" "boto3==1.44.8")

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

splice_python_env() {
    local venv
    venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv"
    if "$venv/bin/python3" -c 'import moto, boto3, sys; sys.exit(moto.__version__ != "5.2.5" or boto3.__version__ != "1.44.8")' \
        2>/dev/null; then
        return 0
    fi
    echo "setup: making $venv with ${splice_python_packages[*]}" >&2
    python3 -m venv "$venv"
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "${splice_python_packages[@]}"
}

splice_find_swift
splice_install_packages
splice_python_env
