#!/usr/bin/env bash
# Sets up the machine (Deploy/setup.sh) and runs every test: unit tests and the integration tests,
# which start their own private PostgreSQL, loopback ZeroMQ endpoints and real FFmpeg encodes.
#
# With no arguments the suite runs in two passes: the media integration tests (real encodes that
# keep both cores busy) on their own, then everything else — the wire, worker and cluster tests
# hold their peers to deadlines of seconds, which a dozen parallel encodes on two cores stretch
# past. Arguments go to `swift test` as they are (e.g. `--filter TranscodeTests`), in one pass.
set -euo pipefail
cd "$(dirname "$0")/.."
source Deploy/setup.sh
swift build --build-tests
if [ $# -gt 0 ]; then
    exec swift test --skip-build "$@"
fi
heavy='SpliceMediaIntegrationTests\.'
status=0
swift test --skip-build --filter "$heavy" || status=$?
swift test --skip-build --skip "$heavy" || status=$?
exit $status
