#!/usr/bin/env bash
# Builds the container image from Deploy/docker/Dockerfile as it is, with buildah, and checks what
# an operator depends on, on the image itself:
#
#   1. `splice --version` in the image prints the version the sources say;
#   2. `ldd -r` of its binary resolves every library and symbol from the image's own files, and the
#      Swift runtime is linked in (no libswift*.so: the runtime image has no Swift);
#   3. it runs as the non-root user splice (7450), whose state, spool and key folders are its own;
#   4. tini is PID 1 and forwards SIGTERM: a worker started as the image's ENTRYPOINT in PID,
#      mount and network namespaces of its own, SIGTERMed while it encodes, drains — the segment it
#      was encoding is committed, by it — and exits 0 (tini passes the status on); the job, finished
#      by a second worker, has every frame and audio sample of its source.
#
# No OCI runtime can start containers here, so step 4 starts the image's ENTRYPOINT the way one
# would (Deploy/image.sh, image_start). Everything talks over the loopback of a network namespace
# the script makes; PostgreSQL is this machine's server, in that namespace too.
#
# Base images cannot be pulled here: Deploy/image.sh makes stand-ins under their names and keeps
# them, and the build's layers, in /var/cache/splice-image (SPLICE_IMAGE_CACHE). The first run
# takes about 32 minutes on 2 cores (debootstrap, the toolchain image, a release build), a rerun
# after a change to the sources 7 to 13, one with nothing changed under a minute. Needs root.
# Prints the build time and the image's size.
set -euo pipefail
cd "$(dirname "$0")/.."
SPLICE_SETUP_IMAGE=1 source Deploy/setup.sh
source Deploy/image.sh

run_id=$$
netns="splice-image-$run_id"
work=$(mktemp -d /var/tmp/splice-image-test.XXXXXX)
chmod 755 "$work"
containers=()
wrappers=()
failures=0

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    # Quietly: the shell would report each background job killed here.
    exec 3>&2 2>/dev/null
    image_netns_delete "$netns"
    for pid in "${wrappers[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    for container in "${containers[@]}"; do
        image_buildah rm "$container" >/dev/null 2>&1 || true
    done
    if [ "$status" -ne 0 ] && [ -d "$work" ]; then
        echo "test-image: failed (exit $status); logs kept in $work" >&3
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pass() { echo "test-image: ok    $*"; }
fail() {
    echo "test-image: FAILED $*" >&2
    failures=$((failures + 1))
}

# MARK: - The build

started=$(date +%s)
image_build
build_seconds=$(($(date +%s) - started))
echo "test-image: built $splice_image in ${build_seconds} s; size $(image_size "$splice_image")" \
    "(base $image_debian stand-in: $(image_size "$image_debian"))"
image_read_config

# MARK: - The image's files

read -r container root < <(image_container "splice-image-test-$run_id")
containers+=("$container")
expected="splice $(sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/splice/SpliceCommand.swift)"
version=$(image_exec "$container" splice --version 2>&1 || true)
if [ "$version" = "$expected" ]; then pass "splice --version: $version"; else fail "splice --version: '$version', expected '$expected'"; fi

binary="${image_entrypoint[-1]}"
linked=$(image_exec "$container" ldd -r "$binary" 2>&1 || true)
if grep -qE 'not found|undefined symbol' <<<"$linked"; then
    fail "ldd -r $binary: $(grep -E 'not found|undefined symbol' <<<"$linked" | head -n 5 | tr '\n' ';')"
elif grep -q 'libswift' <<<"$linked"; then
    fail "ldd $binary: the Swift runtime is linked dynamically: $(grep libswift <<<"$linked" | head -n 3 | tr '\n' ';')"
elif ! grep -q 'libavcodec.so.59' <<<"$linked"; then
    fail "ldd $binary: no libavcodec.so.59 (FFmpeg 5.1): $linked"
else
    pass "ldd -r $binary: $(grep -c '=>' <<<"$linked") libraries, every one found, no undefined symbol, no libswift*.so"
fi

if [ "$image_user" = splice ]; then pass "USER splice"; else fail "USER is '$image_user', not splice"; fi
identity=$(image_exec "$container" id 2>&1 || true)
if [ "$identity" = "uid=7450(splice) gid=7450(splice) groups=7450(splice)" ]; then
    pass "runs as: $identity"
else
    fail "runs as: $identity"
fi
owned=$(image_exec "$container" stat -c '%n %U %a' /var/lib/splice /spool /keys 2>&1 | tr '\n' ';' || true)
if [ "$owned" = "/var/lib/splice splice 755;/spool splice 750;/keys splice 750;" ]; then
    pass "its folders: $owned"
else
    fail "its folders: $owned"
fi
if [ "$(printf '%s ' "${image_entrypoint[@]}")" = "/usr/bin/tini -- /usr/local/bin/splice " ]; then
    pass "ENTRYPOINT: ${image_entrypoint[*]}"
else
    fail "ENTRYPOINT: ${image_entrypoint[*]}"
fi

# MARK: - tini as PID 1: SIGTERM drains a worker

ip netns add "$netns"
ip -n "$netns" link set lo up
url="postgresql://splice:image-test@127.0.0.1:5432/splice"
image_pg_init "$work/postgres" image-test 127.0.0.1/32
image_pg_start "$netns" "$work/postgres" 127.0.0.1 "$work/postgres.log"
wrappers+=("$started_wrapper")
image_pg_ready "$netns" "${url%/splice}/postgres" 60
ip netns exec "$netns" psql "${url%/splice}/postgres" -qc 'CREATE DATABASE splice'

read -r coordinator_container coordinator_root < <(image_container "splice-image-coordinator-$run_id")
containers+=("$coordinator_container")
install -d -o 7450 -g 7450 "$coordinator_root/media"
clip="$coordinator_root/media/clip.mp4"
ffmpeg -v error -y -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=12" \
    -f lavfi -i "sine=frequency=800:sample_rate=48000:duration=12" \
    -c:v libx264 -preset veryfast -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 "$clip"
chown 7450:7450 "$clip"
image_start "$netns" "$coordinator_root" "$work/coordinator.log" coordinator SPLICE_DATABASE_URL="$url" \
    -- coordinator --workers-endpoint tcp://127.0.0.1:7450 --api-endpoint tcp://127.0.0.1:7451
wrappers+=("$started_wrapper")
coordinator_pid=$started_pid

wait_for_log() {  # LOG TEXT SECONDS
    for _ in $(seq $(($3 * 10))); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "test-image: '$2' did not appear in $1 within $3 s; its end:" >&2
    tail -n 20 "$1" >&2
    return 1
}
wait_for_log "$work/coordinator.log" "coordinator ready" 120

# The worker: the image's entrypoint as a container runtime starts it. SPLICE_SPOOL= (empty) as
# `docker run -e SPLICE_SPOOL=` would: the image's /spool default would make it a shared-spool worker.
read -r worker_container worker_root < <(image_container "splice-image-worker-$run_id")
containers+=("$worker_container")
image_start "$netns" "$worker_root" "$work/worker-1.log" worker-1 SPLICE_SPOOL= \
    -- worker --coordinator tcp://127.0.0.1:7450 --name drained --slots 1 --drain-timeout 120 --metrics-endpoint off
wrappers+=("$started_wrapper")
worker_pid=$started_pid
worker_wrapper=$started_wrapper
wait_for_log "$work/worker-1.log" "registered with the coordinator" 60

ns_pids() { awk '/^NSpid:/ { $1 = ""; print substr($0, 2) }' "/proc/$1/status"; }
tini_ns=$(ns_pids "$worker_pid")
splice_pid=$(pgrep -P "$worker_pid" | head -n 1)
splice_ns=$(ns_pids "$splice_pid")
if [ "${tini_ns##* }" = 1 ] && [ "$(readlink "/proc/$worker_pid/exe")" = "$worker_root/usr/bin/tini" ] \
    && [ "$(readlink "/proc/$splice_pid/exe")" = "$worker_root/usr/local/bin/splice" ]; then
    pass "tini is PID 1 of the worker's PID namespace (host PID $worker_pid), splice its child (PID ${splice_ns##* } there)"
else
    fail "tini is not PID 1 with splice its child: tini NSpid '$tini_ns', splice NSpid '$splice_ns'"
fi

# A job whose segments take seconds each (slow preset), so one is running when SIGTERM comes.
image_start "$netns" "$coordinator_root" "$work/submit.log" client \
    -- submit /media/clip.mp4 /media/out.mp4 --coordinator tcp://127.0.0.1:7451 --wait \
    --video-codec h264 --preset slow --crf 23 --audio-codec aac --segment-seconds 2
submit=$started_wrapper
wrappers+=("$submit")
wait_for_log "$work/worker-1.log" "segment started" 120
kill -TERM "$worker_pid"
status=0
wait "$worker_wrapper" || status=$?
if [ "$status" -eq 0 ] && grep -q "draining: no new segments" "$work/worker-1.log" \
    && grep -q "worker stopped.*reason=drained" "$work/worker-1.log" && grep -q "segment encoded" "$work/worker-1.log"; then
    pass "SIGTERM to PID 1 (tini) reached splice: it drained, finished its segment, exit 0"
else
    fail "the worker did not drain on SIGTERM (exit $status); its log: $(tail -n 8 "$work/worker-1.log" | tr '\n' ' ')"
fi
committed=$(ip netns exec "$netns" psql "$url" -Atc "SELECT count(*) FROM job_events e JOIN workers w ON w.id = e.worker_id
    WHERE e.kind = 'segment_done' AND w.name = 'drained'")
if [ "$committed" -ge 1 ]; then
    pass "the segment it was encoding when SIGTERMed was committed, by it ($committed segment(s))"
else
    fail "no segment of the drained worker was committed"
fi

# A second worker finishes the job; the output has every frame and sample of the source.
read -r second_container second_root < <(image_container "splice-image-worker2-$run_id")
containers+=("$second_container")
image_start "$netns" "$second_root" "$work/worker-2.log" worker-2 SPLICE_SPOOL= \
    -- worker --coordinator tcp://127.0.0.1:7450 --name second --slots 2 --metrics-endpoint off
wrappers+=("$started_wrapper")
status=0
wait "$submit" || status=$?
frames() { ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
samples() { ffmpeg -v error -i "$1" -map 0:a:0 -ac 1 -f s16le - | wc -c; }
if [ "$status" -eq 0 ] && [ "$(frames "$coordinator_root/media/out.mp4")" = "$(frames "$clip")" ] \
    && [ "$(samples "$coordinator_root/media/out.mp4")" = "$(samples "$clip")" ]; then
    pass "the job finished: $(frames "$clip") frames and $(($(samples "$clip") / 2)) audio samples, as its source"
else
    fail "the job (submit exit $status): $(tail -n 3 "$work/submit.log" | tr '\n' ' ')"
fi
kill -TERM "$coordinator_pid" 2>/dev/null || true

echo "test-image: image $splice_image, $(image_size "$splice_image"); built in ${build_seconds} s;" \
    "$([ "$failures" -eq 0 ] && echo "every check passed" || echo "$failures check(s) FAILED")"
[ "$failures" -eq 0 ]
