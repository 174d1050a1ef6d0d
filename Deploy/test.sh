#!/usr/bin/env bash
# Sets up the machine (Deploy/setup.sh) and runs every test: unit tests and the integration tests,
# which start their own private PostgreSQL, loopback ZeroMQ endpoints and real FFmpeg encodes.
set -euo pipefail
cd "$(dirname "$0")/.."
source Deploy/setup.sh
swift build --build-tests
swift test --skip-build "$@"
