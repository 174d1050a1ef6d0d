#!/usr/bin/env bash
# Prepares a fresh Debian machine for Splice: finds the Swift toolchain and installs the Debian
# packages the build, the tests and the quick start need (only those that are missing). The tests
# also use promtool (package prometheus: it lints the metrics; on a host with systemd it installs a
# Prometheus service too, `systemctl disable --now prometheus` if you do not want it), headless
# chromium (the status page in a real browser), PyYAML (Deploy/check-deploy.py), Python's
# jsonschema (docs/schema/transcode-request.json is validated against real requests) and
# kubernetes-validate from PyPI with Kubernetes' schemas (Deploy/validate-manifests.py), and moto's
# S3 emulator with botocore's signer (Deploy/s3-emulator.py: the object-storage tests and
# `splice-bench s3`), and for the HTTP API's tests the `requests` client, Schemathesis and
# openapi-spec-validator, which go into a Python environment of their own in /opt/splice-tools
# (SPLICE_TOOLS), never into the system's and never into the checkout. nginx (Debian's; the API's
# HTTPS test runs Deploy/nginx/splice-api.conf as a child process, never as a system service) and
# openssl (the test's self-signed certificate). `splice-bench http` also wants wrk (benchmark only:
# `apt-get install wrk`).
#
# With `--image` (or SPLICE_SETUP_IMAGE=1 before sourcing) it also installs what building and
# running the container image needs: buildah and debootstrap (Deploy/test-image.sh,
# Deploy/test-hosts.sh). Plain test runs leave them out.
# Safe to run any number of times. Sourced by quickstart.sh, test.sh and the image scripts; can
# also run alone.
set -euo pipefail

splice_packages=(
    pkg-config
    libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev libavfilter-dev
    libzmq3-dev libpq-dev libcurl4-openssl-dev libssl-dev postgresql ffmpeg
    prometheus chromium python3-yaml python3-jsonschema python3-venv
    nginx openssl
)
# The container image: building it (buildah, its chroot isolation and storage) and the stand-in base
# images (debootstrap); iproute2 for the hosts test's namespaces and bridge.
splice_image_packages=(buildah debootstrap iproute2)
# PyPI packages for the tests, pinned so the oracles do not move under them (kubernetes-validate's
# schemas change with its version; moto is the S3 emulator, boto3/botocore the independent SigV4 signer).
splice_tools="${SPLICE_TOOLS:-/opt/splice-tools}"
splice_python_tools=(kubernetes-validate==1.37.0 "moto[server]==5.2.5" boto3==1.44.8
    requests==2.34.2 schemathesis==4.32.5 openapi-spec-validator==0.9.0)

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

splice_sudo() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "setup: need root (or sudo) to run: $*" >&2
        exit 1
    fi
}

splice_install_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    splice_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    splice_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The PyPI tools, in a virtual environment of Debian's Python (which keeps its own packages to apt).
splice_python_tools_installed() {
    [ -x "$splice_tools/bin/pip" ] || return 1
    local frozen requirement
    frozen=$("$splice_tools/bin/pip" freeze 2>/dev/null)
    for requirement in "${splice_python_tools[@]}"; do
        # pip freeze names a package without its extras: moto[server]==5.2.5 is moto==5.2.5.
        [[ $requirement == *\[*\]* ]] && requirement="${requirement%%\[*}${requirement#*\]}"
        grep -qxF "$requirement" <<<"$frozen" || return 1
    done
}

splice_install_python_tools() {
    splice_python_tools_installed && return 0
    echo "setup: installing into $splice_tools from PyPI: ${splice_python_tools[*]}" >&2
    [ -x "$splice_tools/bin/pip" ] || splice_sudo /usr/bin/python3 -m venv "$splice_tools"
    splice_sudo "$splice_tools/bin/pip" install -q --disable-pip-version-check "${splice_python_tools[@]}"
}

splice_find_swift
splice_install_packages "${splice_packages[@]}"
if [ "${SPLICE_SETUP_IMAGE:-0}" = 1 ] || { [ "${BASH_SOURCE[0]}" = "$0" ] && [ "${1:-}" = --image ]; }; then
    splice_install_packages "${splice_image_packages[@]}"
fi
splice_install_python_tools
