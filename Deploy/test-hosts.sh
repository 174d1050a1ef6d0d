#!/usr/bin/env bash
# A cluster of hosts that share nothing, made of namespaces on this machine, running the container
# image's files (Deploy/test-image.sh builds the image; this script builds it too if needed):
#
#   db       PostgreSQL (this machine's server binaries; the image has none)
#   coord    splice coordinator, CURVE on, its spool and the media in its own file system
#   worker-1, worker-2, worker-3
#            splice worker in transfer mode (no spool: every excerpt and result crosses the network),
#            one slot, one codec thread (libx264's output depends on its thread count, and the
#            reference's encoders have one thread each)
#   client   `splice keys generate`, `splice workers enroll`, `splice submit --wait`
#
# Each host is a network namespace with one address on a bridge of its own (10.245.24.0/24 by
# default; SPLICE_HOSTS_SUBNET=10.245.24 names another /24 by its first three numbers; the bridge lives in a further namespace, so this machine's own
# network has no address in that range and nothing is routed anywhere) and, for every process, PID,
# mount, UTS and IPC namespaces with a private /tmp. The splice hosts each run in a working
# container of the image (its own writable copy of the image's files: its own keys, spool, state),
# started as a container runtime would (Deploy/image.sh, image_start): tini as PID 1, the image's
# user, environment and working folder. Files cross between hosts only where an operator would copy
# them: each host's .pub key.
#
# Phases, run in order (SPLICE_HOSTS_PHASES="baseline worker-killed …" picks some), each with its
# time printed; every phase but the first injects one fault while a job of the quick-start clip
# runs, then checks that the job's output is exact and that the store committed every segment
# exactly once (job_events against segments). Exact: the fault-free baseline job decodes (ffmpeg
# framemd5) to the timeline of `splice transcode` of the clip at the same settings (every picture's
# timestamps, every audio frame bit for bit, the source's picture count), and each job under a
# fault decodes bit for bit as the baseline did (check_job says why not to the transcode's pictures):
#
#   baseline                 no fault
#   worker-killed            worker-1's processes SIGKILLed mid-job (the host's PID 1, so all of
#                            them), started again 5 s later
#   worker-partitioned       worker-2's link down for 15 s, then up
#   coordinator-partitioned  the coordinator's link down for 10 s, then up
#   database-stopped         the PostgreSQL host stopped (every process killed) for 10 s, then
#                            started again on the same data (crash recovery)
#
# A later phase is a function phase_NAME plus its name in `phases` below.
#
# Everything — namespaces, links, processes, working containers — is removed at the end, also on
# failure or Ctrl-C (the logs are kept then). Needs root. Takes 2 to 3 minutes on 2 cores once the
# image is built; `--no-build` uses the image as it is instead of bringing it up to date first.
set -euo pipefail
cd "$(dirname "$0")/.."
SPLICE_SETUP_IMAGE=1 source Deploy/setup.sh
source Deploy/image.sh

build=1
if [ "${1:-}" = --no-build ]; then
    build=0  # use $splice_image as it is (Deploy/test.sh --slow: test-image.sh has just built it)
fi
phases=(baseline worker-killed worker-partitioned coordinator-partitioned database-stopped)
if [ -n "${SPLICE_HOSTS_PHASES:-}" ]; then
    read -r -a phases <<<"$SPLICE_HOSTS_PHASES"
fi
subnet="${SPLICE_HOSTS_SUBNET:-10.245.24}"
run_id=$$
prefix="splh$run_id"
work=$(mktemp -d /var/tmp/splice-hosts.XXXXXX)
chmod 755 "$work"
password="hosts-$run_id"
job_flags=(--video-codec h264 --preset ultrafast --crf 23 --audio-codec aac --audio-bitrate 128k --segment-seconds 2)

declare -A address=([db]=$subnet.11 [coord]=$subnet.12 [worker-1]=$subnet.21 [worker-2]=$subnet.22
    [worker-3]=$subnet.23 [client]=$subnet.31)
hosts=(db coord worker-1 worker-2 worker-3 client)
declare -A netns link root container pid wrapper
for index in "${!hosts[@]}"; do
    host=${hosts[$index]}
    netns[$host]="$prefix-$host"
    link[$host]="${prefix}v$index"
done
switch="$prefix-switch"
url="postgresql://splice:$password@${address[db]}:5432/splice"
local_url="postgresql://splice:$password@127.0.0.1:5432/splice"

log() { echo "test-hosts: $*"; }

# MARK: - Cleaning up, however the script ends

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    # Every process of every host (each lives in its host's network namespace), then the rest
    # (quietly: the shell would report each background job killed here).
    exec 2>/dev/null
    for host in "${hosts[@]}"; do
        image_netns_delete "${netns[$host]}"
    done
    image_netns_delete "$switch"
    for job in $(jobs -p); do kill -KILL "$job" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for host in "${hosts[@]}"; do
        [ -n "${container[$host]:-}" ] && image_buildah rm "${container[$host]}" >/dev/null 2>&1 || true
    done
    if [ "$status" -ne 0 ]; then
        log "FAILED (exit $status); the hosts' logs are in $work"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

die() {
    log "FAILED: $*"
    exit 1
}

# MARK: - The network: a bridge in a namespace of its own, one veth per host

make_network() {
    ip netns add "$switch"
    ip -n "$switch" link add br0 type bridge
    ip -n "$switch" link set br0 up
    ip -n "$switch" link set lo up
    local host
    for host in "${hosts[@]}"; do
        ip netns add "${netns[$host]}"
        ip -n "$switch" link add "${link[$host]}" type veth peer name eth0 netns "${netns[$host]}"
        ip -n "$switch" link set "${link[$host]}" master br0 up
        ip -n "${netns[$host]}" addr add "${address[$host]}/24" dev eth0
        ip -n "${netns[$host]}" link set eth0 up
        ip -n "${netns[$host]}" link set lo up
    done
}

# MARK: - The hosts

psql_db() { ip netns exec "${netns[db]}" psql "$local_url" -Atqc "$1"; }

start_db() {
    image_pg_start "${netns[db]}" "$work/db" "${address[db]},127.0.0.1" "$work/db.log"
    pid[db]=$started_pid
    wrapper[db]=$started_wrapper
}

# The host's container: its own copy of the image's files.
make_container() {
    local host=$1
    read -r container[$host] root[$host] < <(image_container "$prefix-$host")
    [ -d "${root[$host]:-}/usr/local/bin" ] || die "no working container of $splice_image for $host"
}

# splice (the image's entrypoint) on HOST, in the foreground: the client's commands, key generation.
on_host() {
    local host=$1
    shift
    image_run "${netns[$host]}" "${root[$host]}" "$work/$host.log" "$host" -- "$@"
}

start_coordinator() {
    image_start "${netns[coord]}" "${root[coord]}" "$work/coord.log" coord SPLICE_DATABASE_URL="$url" \
        -- coordinator --workers-endpoint "tcp://${address[coord]}:7450" --api-endpoint "tcp://${address[coord]}:7451" \
        --secret-key /keys/coordinator.key --admin-keys /keys/admin-keys --input-root /media --output-root /media
    pid[coord]=$started_pid
    wrapper[coord]=$started_wrapper
}

start_worker() {
    local host=$1
    # SPLICE_SPOOL= (empty), as `docker run -e SPLICE_SPOOL=`: the image's default /spool would
    # make a shared-spool worker of it.
    image_start "${netns[$host]}" "${root[$host]}" "$work/$host.log" "$host" SPLICE_SPOOL= \
        -- worker --coordinator "tcp://${address[coord]}:7450" --name "$host" --slots 1 --codec-threads 1 \
        --secret-key /keys/worker.key --server-key /keys/coordinator.pub
    pid[$host]=$started_pid
    wrapper[$host]=$started_wrapper
}

# Waits until TEXT has been logged COUNT times in HOST's log (default once).
wait_for_log() {
    local host=$1 text=$2 patience=$3 count=${4:-1}
    for _ in $(seq $((patience * 10))); do
        [ "$(grep -c "$text" "$work/$host.log" 2>/dev/null || true)" -ge "$count" ] && return 0
        sleep 0.1
    done
    tail -n 20 "$work/$host.log" >&2
    die "'$text' did not appear in $host's log within $patience s"
}

make_hosts() {
    log "setting up: the database, the coordinator, 3 transfer-mode workers and a client, on ${subnet}.0/24"
    image_pg_init "$work/db" "$password" "${subnet}.0/24"
    start_db
    image_pg_ready "${netns[db]}" "${local_url%/splice}/postgres" 60
    ip netns exec "${netns[db]}" psql "${local_url%/splice}/postgres" -qc 'CREATE DATABASE splice'

    local host
    for host in coord worker-1 worker-2 worker-3 client; do
        make_container "$host"
    done
    # Keys: each host makes its own pair; only the .pub files travel.
    on_host coord keys generate /keys/coordinator >/dev/null
    on_host client keys generate /keys/client >/dev/null
    install -o 7450 -g 7450 -m 0644 "${root[client]}/keys/client.pub" "${root[coord]}/keys/admin-keys"
    for host in worker-1 worker-2 worker-3 client; do
        install -o 7450 -g 7450 -m 0644 "${root[coord]}/keys/coordinator.pub" "${root[$host]}/keys/coordinator.pub"
    done

    # The media: the quick-start clip on the coordinator's host; the reference beside it.
    install -d -o 7450 -g 7450 "${root[coord]}/media" "${root[client]}/media"
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=30" \
        -f lavfi -i "aevalsrc=exprs='0.3*sin(2*PI*800*t+(600/0.37)*sin(2*PI*0.37*t))':s=48000:d=30[s];anoisesrc=c=pink:a=0.1:r=48000:d=30[n];[s][n]amix=inputs=2:normalize=0[out0]" \
        -c:v libx264 -preset veryfast -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 "${root[coord]}/media/clip.mp4"
    chown 7450:7450 "${root[coord]}/media/clip.mp4"
    cp -p "${root[coord]}/media/clip.mp4" "${root[client]}/media/clip.mp4"

    start_coordinator
    wait_for_log coord "coordinator ready" 120
    for host in worker-1 worker-2 worker-3; do
        on_host "$host" keys generate /keys/worker >/dev/null
        install -o 7450 -g 7450 -m 0644 "${root[$host]}/keys/worker.pub" "${root[client]}/keys/$host.pub"
        on_host client workers enroll "/keys/$host.pub" --name "$host" --coordinator "tcp://${address[coord]}:7451" \
            --secret-key /keys/client.key --server-key /keys/coordinator.pub >/dev/null \
            || die "enrolling $host failed: $(tail -n 3 "$work/client.log")"
        start_worker "$host"
    done
    for host in worker-1 worker-2 worker-3; do
        wait_for_log "$host" "registered with the coordinator" 60
    done
}

# MARK: - Jobs and their checks

digest() {  # FILE: the framemd5 lines (timestamps, sizes, MD5s) of every picture and audio frame, and the audio samples
    local file=$1 kept
    kept="$work/$(basename "$file" .mp4)"
    ffmpeg -v error -i "$file" -map 0:v:0 -f framemd5 - | grep -v '^#' | cut -d, -f2- >"$kept.video.framemd5"
    ffmpeg -v error -i "$file" -map 0:a:0 -f framemd5 - | grep -v '^#' | cut -d, -f2- >"$kept.audio.framemd5"
    local pictures samples
    pictures=$(wc -l <"$kept.video.framemd5")
    samples=$(awk -F, '{ s += $3 } END { print s }' "$kept.audio.framemd5")
    echo "$(cat "$kept.video.framemd5" "$kept.audio.framemd5" | md5sum | cut -c1-12) $pictures $samples"
}

# video|audio NAME OTHER [FIELDS]: the first frame (from 0) whose line (or cut -f FIELDS of it) differs, or -.
first_difference() {
    local fields=${4:-1-}
    diff <(cut -d, -f"$fields" "$work/$2.$1.framemd5") <(cut -d, -f"$fields" "$work/$3.$1.framemd5") \
        | awk '/^[0-9]/ { print $1 - 1; found = 1; exit } END { if (!found) print "-" }' | sed 's/[^0-9-].*//'
}

make_reference() {
    log "the reference: splice transcode of the clip on the client host, the same settings"
    on_host client transcode /media/clip.mp4 /media/reference.mp4 --jobs 2 "${job_flags[@]}" >/dev/null \
        || die "splice transcode failed: $(tail -n 3 "$work/client.log")"
    reference=$(digest "${root[client]}/media/reference.mp4")
    source_pictures=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
        -of csv=p=0 "${root[client]}/media/clip.mp4")
    log "reference: $reference (framemd5 digest, pictures, audio samples); the source has $source_pictures pictures"
}

# Submits output NAME with --wait from the client host; sets submit_wrapper and job.
submit() {
    local name=$1
    image_start "${netns[client]}" "${root[client]}" "$work/submit-$name.log" client \
        -- submit /media/clip.mp4 "/media/$name.mp4" --wait --coordinator "tcp://${address[coord]}:7451" \
        --secret-key /keys/client.key --server-key /keys/coordinator.pub --timeout 30 "${job_flags[@]}"
    submit_wrapper=$started_wrapper
    job=""
    for _ in $(seq 300); do
        job=$(psql_db "SELECT id FROM jobs WHERE output_url LIKE '%/$name.mp4'" 2>/dev/null || true)
        [ -n "$job" ] && return 0
        sleep 0.1
    done
    die "the job $name never reached the database: $(tail -n 3 "$work/submit-$name.log")"
}

# Waits until the job has COUNT segments committed and is still running ("mid-job").
wait_mid_job() {
    local count=$1
    for _ in $(seq 1200); do
        local state done
        IFS='|' read -r state done < <(psql_db "SELECT state, segments_done FROM jobs WHERE id = '$job'" 2>/dev/null || echo "|")
        if [ "$state" = running ] && [ "${done:-0}" -ge "$count" ]; then return 0; fi
        case "$state" in completed | failed | cancelled | stitching) die "the job reached $state before the fault";; esac
        sleep 0.1
    done
    die "the job never had $count segments done"
}

# Waits for `splice submit --wait`, then checks the output and the store; phase_result says what it found.
#
# The oracle. `splice transcode` plans this clip differently from the coordinator (it balances its
# segments' costs with cuts between keyframes: 16 video segments; the coordinator cuts at the
# keyframes: 15), so where their cuts differ their pictures differ too. So the baseline job must
# decode to exactly the reference's timeline — every picture's dts, pts and duration, every audio
# frame bit for bit, as many audio samples — and every later job, run under a fault, must decode bit
# for bit as the baseline did: every picture's and audio frame's MD5.
check_job() {
    local name=$1 status=0
    wait "$submit_wrapper" || status=$?
    job_finished_at=$(date +%s.%N)
    [ "$status" -eq 0 ] || die "$name: splice submit exited $status: $(tail -n 5 "$work/submit-$name.log")"
    local output="${root[coord]}/media/$name.mp4" found
    found=$(digest "$output")
    if [ "$name" = baseline ]; then
        cmp -s <(cut -d, -f1-3 "$work/baseline.video.framemd5") <(cut -d, -f1-3 "$work/reference.video.framemd5") \
            && cmp -s "$work/baseline.audio.framemd5" "$work/reference.audio.framemd5" \
            && [ "$(wc -l <"$work/baseline.video.framemd5")" = "$source_pictures" ] \
            || die "$name: the output ($found) has not the reference's timeline ($reference; the source has $source_pictures pictures)" \
                "(first differences: picture $(first_difference video "$name" reference 1-3), audio frame $(first_difference audio "$name" reference))"
        baseline=$found
    else
        [ "$found" = "$baseline" ] || die "$name: the output decodes as $found, the fault-free job as $baseline" \
            "(first differences: picture $(first_difference video "$name" baseline), audio frame $(first_difference audio "$name" baseline))"
    fi
    local ledger
    ledger=$(psql_db "
        WITH done AS (SELECT segment_id, lease_token FROM job_events WHERE job_id = '$job' AND kind = 'segment_done'),
             issued AS (SELECT segment_id, lease_token FROM job_events
                        WHERE job_id = '$job' AND kind IN ('segment_leased', 'segment_backup_started'))
        SELECT (SELECT count(*) FROM segments WHERE job_id = '$job'),
               (SELECT count(*) FROM segments WHERE job_id = '$job' AND state = 'done'),
               (SELECT count(*) FROM (SELECT segment_id FROM done GROUP BY segment_id HAVING count(*) > 1) twice),
               (SELECT count(*) FROM segments s WHERE s.job_id = '$job' AND NOT EXISTS
                    (SELECT 1 FROM done d WHERE d.segment_id = s.id AND d.lease_token = s.lease_token)),
               (SELECT count(*) FROM done d WHERE NOT EXISTS
                    (SELECT 1 FROM issued i WHERE i.segment_id = d.segment_id AND i.lease_token = d.lease_token)),
               (SELECT count(*) FROM job_events WHERE job_id = '$job' AND kind IN ('segment_leased', 'segment_backup_started'))")
    local total done twice lost unexpected attempts
    IFS='|' read -r total done twice lost unexpected attempts <<<"$ledger"
    [ "$total" -gt 0 ] && [ "$done" = "$total" ] && [ "$twice" = 0 ] && [ "$lost" = 0 ] && [ "$unexpected" = 0 ] \
        || die "$name: segments $done/$total done, committed twice $twice, lost $lost, unexpected $unexpected"
    phase_result="$total segments, each committed once ($attempts attempts); output $found"
    [ "$name" = baseline ] && phase_result+=" (the reference's timeline and audio)" || phase_result+=" (as the baseline's)"
}

# MARK: - Phases

phase_baseline() {
    submit baseline
    check_job baseline
}

phase_worker-killed() {
    submit worker-killed
    wait_mid_job 2
    fault_at=$(date +%s.%N)
    kill -KILL "${pid[worker-1]}"
    wait "${wrapper[worker-1]}" 2>/dev/null || true
    sleep 5
    start_worker worker-1
    check_job worker-killed
}

phase_worker-partitioned() {
    submit worker-partitioned
    wait_mid_job 2
    fault_at=$(date +%s.%N)
    ip -n "$switch" link set "${link[worker-2]}" down
    sleep 15
    ip -n "$switch" link set "${link[worker-2]}" up
    check_job worker-partitioned
}

phase_coordinator-partitioned() {
    submit coordinator-partitioned
    wait_mid_job 2
    fault_at=$(date +%s.%N)
    ip -n "$switch" link set "${link[coord]}" down
    sleep 10
    ip -n "$switch" link set "${link[coord]}" up
    check_job coordinator-partitioned
}

phase_database-stopped() {
    submit database-stopped
    wait_mid_job 2
    fault_at=$(date +%s.%N)
    kill -KILL "${pid[db]}"
    wait "${wrapper[db]}" 2>/dev/null || true
    sleep 10
    start_db
    check_job database-stopped
}

# MARK: - The run

for phase in "${phases[@]}"; do
    declare -F "phase_$phase" >/dev/null || die "no phase $phase (phases: baseline worker-killed worker-partitioned coordinator-partitioned database-stopped)"
done
started=$(date +%s)
if [ "$build" = 1 ]; then
    image_build
    log "image $splice_image ready in $(($(date +%s) - started)) s"
fi
image_exists "$splice_image" || die "no image $splice_image: run Deploy/test-image.sh (or this script without --no-build)"
image_read_config
setup_started=$(date +%s.%N)
make_network
make_hosts
make_reference
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
log "set up in $(seconds "$setup_started" "$(date +%s.%N)") s"

summary=()
for phase in "${phases[@]}"; do
    phase_started=$(date +%s.%N)
    fault_at=""
    phase_result=""
    "phase_$phase"
    line="$phase: $(seconds "$phase_started" "$(date +%s.%N)") s"
    if [ -n "$fault_at" ]; then
        line+=", the job done $(seconds "$fault_at" "$job_finished_at") s after the fault began"
    fi
    log "$line — $phase_result"
    summary+=("$line")
done
log "every phase passed in $(($(date +%s) - started)) s:"
printf '  %s\n' "${summary[@]}"
