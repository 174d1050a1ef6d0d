#!/usr/bin/env bash
# Builds `splice` as it was at the commit in Deploy/compat-commit — the last release of the worker
# protocol's previous version (splice-worker 2) — so the upgrade tests (UpgradeScenarioTests) can run
# an old worker against today's coordinator. The build happens once, in a `git worktree` of this
# checkout, and only the binary is kept: ~/.cache/splice-compat/<hash>/splice (SPLICE_COMPAT_CACHE
# moves the cache). Run again, it prints the cached path and exits at once.
#
#     Deploy/build-compat.sh          # build (or find) the old binary, print its path
#
# A debug build like the tests' own, on 2 cores about as long as a clean `swift build` of the
# package. The tests find the binary through the same path (Tests/SpliceTestSupport/CompatBinary.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
commit=$(tr -d '[:space:]' < Deploy/compat-commit)
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "build-compat: commit $commit (Deploy/compat-commit) is not in this clone;" \
        "fetch the full history (git fetch --unshallow) and run this again" >&2
    exit 2
fi
cache="${SPLICE_COMPAT_CACHE:-$HOME/.cache/splice-compat}/$commit"
if [ -x "$cache/splice" ]; then
    echo "$cache/splice"
    exit 0
fi
source Deploy/setup.sh >&2
mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/splice-compat.XXXXXX")
cleanup() {
    git -C "$root" worktree remove --force "$work/src" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
git worktree add --detach "$work/src" "$commit" >&2
started=$(date +%s)
(cd "$work/src" && nice -n 10 swift build --product splice >&2)
# Written under another name and renamed, so a build cut short never leaves a half binary that
# the next run would take for a finished one.
cp "$work/src/.build/debug/splice" "$cache/splice.partial"
mv "$cache/splice.partial" "$cache/splice"
echo "build-compat: built splice at $commit in $(( $(date +%s) - started )) s" >&2
echo "$cache/splice"
