#!/usr/bin/env bash
# A cluster of hosts that share nothing, made of namespaces on this machine, running the container
# image's files (Deploy/test-image.sh builds the image; this script builds it too if needed):
#
#   db       PostgreSQL (this machine's server binaries; the image has none)
#   coord    splice coordinator, CURVE on, its spool and the media in its own file system
#   worker-1, worker-2, worker-3
#            splice worker in transfer mode (no spool: every excerpt and result crosses the network),
#            one slot, one codec thread (libx264's output depends on its thread count, and the
#            reference's encoders have one thread each); each joins with a join token and a key pair
#            of its own, as docs/deploy.md tells operators to (no worker host holds an admin key)
#   client   the operator: `splice keys generate`, `splice workers join-token create --uses 3`,
#            `splice workers`, `splice submit --wait`
#
# Each host is a network namespace with one address on a bridge of its own (10.245.24.0/24 by
# default; SPLICE_HOSTS_SUBNET=10.245.24 names another /24 by its first three numbers; the bridge lives in a further namespace, so this machine's own
# network has no address in that range and nothing is routed anywhere) and, for every process, PID,
# mount, UTS and IPC namespaces with a private /tmp. The splice hosts each run in a working
# container of the image (its own writable copy of the image's files: its own keys, spool, state),
# started as a container runtime would (Deploy/image.sh, image_start): tini as PID 1, the image's
# user, environment and working folder. Files cross between hosts only where an operator would copy
# them: the coordinator's .pub key, the client's .pub into the coordinator's --admin-keys, and the
# join token the client creates, handed to each worker host in its environment (SPLICE_JOIN_TOKEN,
# as a Kubernetes Secret would be). A fourth join with that token, its 3 uses spent, must be refused.
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
#   coordinator-restarted    the coordinator SIGTERMed and started again at once (the upgrade
#                            runbook's step 3 within one release)
#   database-stopped         the PostgreSQL host stopped (every process killed) for 10 s, then
#                            started again on the same data (crash recovery)
#   upgrade                  docs/deploy.md's upgrade runbook, rehearsed: a fleet of the previous
#                            release (Deploy/build-compat.sh's binary, on a database of its own)
#                            runs the job while the database is backed up and migrated, the
#                            coordinator replaced by this release's, then each worker drained
#                            (SIGTERM) and replaced; skipped, saying why, when the old binary
#                            cannot be built. The worker hosts are held to SPLICE_HOSTS_UPGRADE_CPU
#                            percent of a core each (default 8) during it, so that the job runs
#                            throughout. The phases after it run on the upgraded database.
#
# A later phase is a function phase_NAME plus its name in `all_phases` below.
#
# Everything — namespaces, links, processes, working containers — is removed at the end, also on
# failure or Ctrl-C (the logs are kept then, and with SPLICE_HOSTS_KEEP_LOGS=1 always). Needs root. Takes about 4.5 minutes on 2 cores once the
# image is built (2 of them the upgrade phase), plus, once per machine, the previous release's
# build; `--no-build` uses the image as it is instead of bringing it up to date first.
set -euo pipefail
cd "$(dirname "$0")/.."
SPLICE_SETUP_IMAGE=1 source Deploy/setup.sh
source Deploy/image.sh

build=1
if [ "${1:-}" = --no-build ]; then
    build=0  # use $splice_image as it is (Deploy/test.sh --slow: test-image.sh has just built it)
fi
all_phases=(baseline worker-killed worker-partitioned coordinator-partitioned coordinator-restarted database-stopped upgrade)
phases=("${all_phases[@]}")
if [ -n "${SPLICE_HOSTS_PHASES:-}" ]; then
    read -r -a phases <<<"$SPLICE_HOSTS_PHASES"
fi
subnet="${SPLICE_HOSTS_SUBNET:-10.245.24}"
run_id=$$
prefix="splh$run_id"
work=$(mktemp -d /var/tmp/splice-hosts.XXXXXX)
chmod 755 "$work"
password="hosts-$run_id"
upgrade_cpu="${SPLICE_HOSTS_UPGRADE_CPU:-8}"
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
database=splice  # the database the coordinator uses (the upgrade phase moves to one of its own)
db_url() { echo "postgresql://splice:$password@$1:5432/$database"; }
local_url="postgresql://splice:$password@127.0.0.1:5432/splice"
worker_join_token=""  # what each worker host is given in SPLICE_JOIN_TOKEN (the Secret), once made
cpu_groups=()

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
    for group in "${cpu_groups[@]}"; do
        for _ in 1 2 3 4 5; do rmdir "$group" 2>/dev/null && break; sleep 0.2; done
    done
    for host in "${hosts[@]}"; do
        [ -n "${container[$host]:-}" ] && image_buildah rm "${container[$host]}" >/dev/null 2>&1 || true
    done
    if [ "$status" -ne 0 ]; then
        log "FAILED (exit $status); the hosts' logs are in $work"
    elif [ -n "${SPLICE_HOSTS_KEEP_LOGS:-}" ]; then
        log "the hosts' logs are kept in $work (SPLICE_HOSTS_KEEP_LOGS)"
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

psql_db() { ip netns exec "${netns[db]}" psql "$(db_url 127.0.0.1)" -Atqc "$1"; }

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
    image_start "${netns[coord]}" "${root[coord]}" "$work/coord.log" coord SPLICE_DATABASE_URL="$(db_url "${address[db]}")" \
        -- coordinator --workers-endpoint "tcp://${address[coord]}:7450" --api-endpoint "tcp://${address[coord]}:7451" \
        --secret-key /keys/coordinator.key --admin-keys /keys/admin-keys --input-root /media --output-root /media
    pid[coord]=$started_pid
    wrapper[coord]=$started_wrapper
}

start_worker() {
    local host=$1
    # SPLICE_SPOOL= (empty), as `docker run -e SPLICE_SPOOL=`: the image's default /spool would
    # make a shared-spool worker of it. The join token comes in the environment, as a Kubernetes
    # Secret's would; the worker's own key pair stays on its host, so a restart presents the same
    # key and spends no use of the token.
    local token=()
    [ -z "$worker_join_token" ] || token=(SPLICE_JOIN_TOKEN="$worker_join_token")
    image_start "${netns[$host]}" "${root[$host]}" "$work/$host.log" "$host" SPLICE_SPOOL= "${token[@]}" \
        -- worker --coordinator "tcp://${address[coord]}:7450" --name "$host" --slots 1 --codec-threads 1 \
        --secret-key /keys/worker.key --server-key /keys/coordinator.pub
    pid[$host]=$started_pid
    wrapper[$host]=$started_wrapper
}

# How many times TEXT has been logged in HOST's log (it grows over the host's restarts).
log_count() {
    grep -c "$2" "$work/$1.log" 2>/dev/null || true
}

# Waits until TEXT has been logged COUNT times in HOST's log (default once).
wait_for_log() {
    local host=$1 text=$2 patience=$3 count=${4:-1}
    for _ in $(seq $((patience * 10))); do
        [ "$(log_count "$host" "$text")" -ge "$count" ] && return 0
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
    join_workers
}

# The client's API commands, with its key: `client_api LOG ARGUMENT…` (output appended to LOG).
client_api() {
    local log=$1
    shift
    image_run "${netns[client]}" "${root[client]}" "$log" client -- "$@" --coordinator "tcp://${address[coord]}:7451" \
        --secret-key /keys/client.key --server-key /keys/coordinator.pub
}

# `splice workers --json` from the client, one line per worker: "NAME CONNECTED PROTOCOL".
list_workers() {
    local listing="$work/workers.json"
    : >"$listing"
    client_api "$listing" workers --json || die "splice workers failed: $(tail -n 3 "$listing")"
    python3 -c 'import json, sys
for worker in json.load(open(sys.argv[1])):
    print(worker.get("name") or "-", "yes" if worker.get("connected") else "no", worker.get("protocolVersion") or "-")' "$listing"
}

# The workers join as docs/deploy.md (Join tokens) tells operators: the client creates one token
# for three workers; each worker host gets the token (and the coordinator's .pub), makes a key pair
# of its own and joins; no worker host ever holds the client's key. `splice workers` must then
# list the three, and a fourth join with the spent token must be refused.
join_workers() {
    local created="$work/join-token.out" host
    client_api "$created" workers join-token create --uses 3 --ttl 1h --name hosts \
        || die "splice workers join-token create failed: $(tail -n 3 "$created")"
    worker_join_token=$(grep -m 1 -o '^splj_[^[:space:]]*' "$created" || true)
    [ -n "$worker_join_token" ] || die "splice workers join-token create printed no token: $(tail -n 3 "$created")"
    for host in worker-1 worker-2 worker-3; do
        on_host "$host" keys generate /keys/worker >/dev/null
        local keys
        keys=$(ls "${root[$host]}/keys" | tr '\n' ' ')
        [ "$keys" = "coordinator.pub worker.key worker.pub " ] || die "$host holds other keys than its own and the coordinator's .pub: $keys"
        start_worker "$host"
    done
    for host in worker-1 worker-2 worker-3; do
        wait_for_log "$host" "joined the cluster: the coordinator enrolled this worker's key" 60
        wait_for_log "$host" "registered with the coordinator" 60
    done
    local listed
    listed=$(list_workers | sort | tr '\n' ';')
    [ "$listed" = "worker-1 yes 3;worker-2 yes 3;worker-3 yes 3;" ] \
        || die "splice workers lists '$listed', not the three joined workers connected at protocol 3"

    # A fourth worker, on worker-3's host with a key made in memory, presents the spent token.
    local status=0 refused="$work/worker-4-join.log"
    image_start "${netns[worker-3]}" "${root[worker-3]}" "$refused" worker-4 SPLICE_SPOOL= SPLICE_JOIN_TOKEN="$worker_join_token" \
        -- worker --coordinator "tcp://${address[coord]}:7450" --name worker-4 --slots 1 --metrics-endpoint off \
        --server-key /keys/coordinator.pub
    local fourth=$started_wrapper
    for _ in $(seq 600); do
        kill -0 "$fourth" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$fourth" 2>/dev/null && die "a fourth join with the spent token was not answered within 60 s: $(tail -n 3 "$refused")"
    wait "$fourth" || status=$?
    grep -q "refused this worker's join token (used-up)" "$refused" && [ "$status" = 1 ] \
        || die "a fourth join with the spent token: exit $status, $(tail -n 2 "$refused")"
    local joined refusals
    joined=$(psql_db "SELECT count(*) FROM job_events WHERE kind = 'worker_joined'")
    refusals=$(psql_db "SELECT count(*) FROM job_events WHERE kind = 'worker_join_refused'")
    [ "$joined" = 3 ] && [ "$refusals" = 1 ] || die "job_events: $joined worker_joined, $refusals worker_join_refused (3 and 1 expected)"
    log "the workers joined with a token for 3 (each its own key; splice workers: $listed); a fourth join" \
        "was refused, exit 1: $(grep -o "refused this worker's join token (used-up)" "$refused")"
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

phase_coordinator-restarted() {
    submit coordinator-restarted
    wait_mid_job 2
    fault_at=$(date +%s.%N)
    local ready
    ready=$(log_count coord "coordinator ready")
    stop_host coord || true
    start_coordinator
    wait_for_log coord "coordinator ready" 120 $((ready + 1))
    check_job coordinator-restarted
}

# MARK: - The upgrade rehearsal (docs/deploy.md, Upgrading)

compat_binary=""  # the previous release's splice (Deploy/build-compat.sh), once found
compat_skip=""    # why the upgrade phase is skipped, when it is

# Finds (or builds, once, 10 to 15 minutes) the previous release's binary before the hosts are set up.
find_compat() {
    local status=0
    compat_binary=$(Deploy/build-compat.sh 2>"$work/build-compat.log") || status=$?
    if [ "$status" -ne 0 ] || [ ! -x "$compat_binary" ]; then
        compat_binary=""
        compat_skip="the previous release's binary could not be built (Deploy/build-compat.sh exit $status:"
        compat_skip+=" $(tail -n 1 "$work/build-compat.log"))"
        log "the upgrade phase will be skipped: $compat_skip"
        return 0
    fi
    # A debug build with this machine's toolchain: the Swift runtime is not linked in, and its RUNPATH
    # names the toolchain's folder. The runtime image has no Swift, so the toolchain libraries it
    # links (only those) go into each container at that same path, beside the old binary.
    mapfile -t compat_runtime < <(ldd "$compat_binary" | awk -v dir="$image_toolchain/" 'index($3, dir) == 1 { print $3 }')
    log "the previous release: $compat_binary ($("$compat_binary" --version 2>&1), commit $(tr -d '[:space:]' <Deploy/compat-commit | cut -c1-12));" \
        "it links ${#compat_runtime[@]} libraries of the toolchain in $image_toolchain"
}

# Puts BINARY at PATH (default /usr/local/bin/splice) in HOST's container: copied beside it, then
# renamed over it, so a process still running the file it replaces keeps that one.
put_binary() {
    local host=$1 binary=$2 path=${3:-/usr/local/bin/splice}
    install -m 0755 "$binary" "${root[$host]}$path.partial"
    mv -f "${root[$host]}$path.partial" "${root[$host]}$path"
}

# The old binary and the toolchain libraries it links into HOST's container; ldd there finds them all.
put_compat() {
    local host=$1 library linked
    for library in "${compat_runtime[@]}"; do
        install -D -m 0644 "$library" "${root[$host]}$library"
    done
    put_binary "$host" "$compat_binary"
    linked=$(image_exec "${container[$host]}" ldd -r /usr/local/bin/splice 2>&1 || true)
    if grep -qE 'not found|undefined symbol' <<<"$linked"; then
        die "the previous release's binary in $host's container: $(grep -E 'not found|undefined symbol' <<<"$linked" | head -n 3 | tr '\n' ';')"
    fi
}

# splice at BINARY (not the entrypoint's) on HOST, output to LOG: the new release staged beside the old.
on_host_binary() {
    local binary=$1 host=$2 log=$3 status=0
    shift 3
    local entrypoint=("${image_entrypoint[@]}")
    image_entrypoint[-1]=$binary
    image_run "${netns[$host]}" "${root[$host]}" "$log" "$host" -- "$@" || status=$?
    image_entrypoint=("${entrypoint[@]}")
    return "$status"
}

# Every process of HOST into a CPU cgroup of its own held to $upgrade_cpu % of one core (cgroup v1's
# cpu controller, or v2's cpu.max): slower machines, so the job outlasts the upgrade. The output
# does not depend on speed (one codec thread).
throttle() {
    local host=$1 group process
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        group=/sys/fs/cgroup/$prefix-$host
        if [ ! -d "$group" ]; then
            echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
            mkdir "$group" && cpu_groups+=("$group")
            echo "$((upgrade_cpu * 1000)) 100000" >"$group/cpu.max"
        fi
    else
        group=/sys/fs/cgroup/cpu/$prefix-$host
        if [ ! -d "$group" ]; then
            mkdir "$group" && cpu_groups+=("$group")
            echo 100000 >"$group/cpu.cfs_period_us"
            echo "$((upgrade_cpu * 1000))" >"$group/cpu.cfs_quota_us"
        fi
    fi
    for process in $(ip netns pids "${netns[$host]}"); do
        echo "$process" >"$group/cgroup.procs" 2>/dev/null || true
    done
}

# Every process back in the parent cgroup, the groups removed.
unthrottle() {
    local group process
    for group in "${cpu_groups[@]}"; do
        for process in $(cat "$group/cgroup.procs" 2>/dev/null); do
            echo "$process" >"$(dirname "$group")/cgroup.procs" 2>/dev/null || true
        done
        rmdir "$group" 2>/dev/null || true
    done
    cpu_groups=()
}

# SIGTERM to HOST's PID 1 (tini passes it on); waits for the container to end and returns its status.
stop_host() {
    local host=$1 status=0
    kill -TERM "${pid[$host]}"
    wait "${wrapper[$host]}" || status=$?
    return "$status"
}

# "12/15" segments done of the job, and its state.
job_progress() {
    psql_db "SELECT segments_done || '/' || segments_total || ' segments done, ' || state FROM jobs WHERE id = '$job'" 2>/dev/null \
        || echo "(the database did not answer)"
}

phase_upgrade() {
    if [ -z "$compat_binary" ]; then
        phase_result="SKIPPED: $compat_skip"
        return 0
    fi
    [ -n "${baseline:-}" ] || die "upgrade: the baseline phase must run before it (its output is the oracle)"
    local mark step_times=() host status new="$work/splice-new"
    mark=$(date +%s.%N)
    step() {  # the step's time since the last one, and where the job is
        local now
        now=$(date +%s.%N)
        log "  upgrade: $1 — $(seconds "$mark" "$now") s${job:+ (job: $(job_progress))}"
        step_times+=("$2 $(seconds "$mark" "$now") s")
        mark=$now
    }

    # The fleet of the previous release: its binary in every splice host's container, its coordinator
    # on a database of its own (this release's schema is newer than it accepts), its workers'
    # keys enrolled as that release did it (it had no join tokens): the client enrolls their .pub.
    job=""
    stop_host coord || true
    for host in worker-1 worker-2 worker-3; do stop_host "$host" || true; done
    [ -x "$new" ] || cp -p "${root[coord]}/usr/local/bin/splice" "$new"
    for host in coord worker-1 worker-2 worker-3 client; do put_compat "$host"; done
    database=splice_upgrade
    worker_join_token=""
    ip netns exec "${netns[db]}" psql "${local_url%/splice}/postgres" -qc "CREATE DATABASE $database"
    local ready
    ready=$(log_count coord "coordinator ready")
    start_coordinator
    wait_for_log coord "coordinator ready" 120 $((ready + 1))
    for host in worker-1 worker-2 worker-3; do
        install -o 7450 -g 7450 -m 0644 "${root[$host]}/keys/worker.pub" "${root[client]}/keys/$host.pub"
        client_api "$work/client.log" workers enroll "/keys/$host.pub" --name "$host" >/dev/null \
            || die "enrolling $host with the previous release failed: $(tail -n 3 "$work/client.log")"
        local registered
        registered=$(log_count "$host" "registered with the coordinator")
        start_worker "$host"
        throttle "$host"
        wait_for_log "$host" "registered with the coordinator" 60 $((registered + 1))
    done
    step "the previous release's fleet up (its coordinator on a new database, 3 workers at ${upgrade_cpu}% of a core each)" fleet

    submit upgrade
    wait_mid_job 2
    fault_at=$(date +%s.%N)
    step "its job running" job

    # 1. The backup (migrations only go forward).
    ip netns exec "${netns[db]}" pg_dump "$(db_url 127.0.0.1)" -Fc -f "$work/upgrade-backup.dump" \
        || die "pg_dump failed"
    step "1. backup: pg_dump, $(du -k "$work/upgrade-backup.dump" | cut -f1) KiB" backup

    # 2. The migrations, with this release's binary on the coordinator's host, while the old
    #    coordinator keeps running on the migrated schema.
    put_binary coord "$new" /usr/local/bin/splice.new
    on_host_binary /usr/local/bin/splice.new coord "$work/migrate-status.log" db status --database "$(db_url "${address[db]}")" \
        || die "splice db status failed: $(tail -n 3 "$work/migrate-status.log")"
    on_host_binary /usr/local/bin/splice.new coord "$work/migrate.log" db migrate --database "$(db_url "${address[db]}")" \
        || die "splice db migrate failed: $(tail -n 3 "$work/migrate.log")"
    local applied
    applied=$(awk '$1 == "applied" && $2 ~ /^[0-9]+$/ { printf "%s%s", (n++ ? ", " : ""), $2 "_" $3 }' "$work/migrate.log")
    kill -0 "${pid[coord]}" 2>/dev/null || die "the previous release's coordinator stopped after the migration: $(tail -n 5 "$work/coord.log")"
    step "2. migrations by the new binary: applied ${applied:-none}; the old coordinator runs on" migrate

    # 3. The coordinator: SIGTERM, then the new binary in its place.
    ready=$(log_count coord "coordinator ready")
    local done_before
    done_before=$(psql_db "SELECT segments_done FROM jobs WHERE id = '$job'")
    status=0
    stop_host coord || status=$?
    mv -f "${root[coord]}/usr/local/bin/splice.new" "${root[coord]}/usr/local/bin/splice"
    start_coordinator
    wait_for_log coord "coordinator ready" 120 $((ready + 1))
    put_binary client "$new"
    local listed
    for _ in $(seq 60); do
        listed=$(list_workers | sort | tr '\n' ';')
        [ "$listed" = "worker-1 yes 2;worker-2 yes 2;worker-3 yes 2;" ] && break
        sleep 1
    done
    [ "$listed" = "worker-1 yes 2;worker-2 yes 2;worker-3 yes 2;" ] \
        || die "after the coordinator's upgrade, splice workers lists '$listed', not the old workers at protocol 2"
    step "3. coordinator replaced (the old one exited $status); splice workers: the old workers speak protocol 2" coordinator
    # The workers only once the new coordinator is doing work: a segment committed since it started.
    # (Results a transfer-mode worker finished during the restart are not fetched by the new
    # coordinator; they wait for their leases to run out, 60 s, and are encoded again — the
    # coordinator-restarted phase shows the same within one release. A worker drained meanwhile
    # would hold such a result to its drain timeout.)
    for _ in $(seq 1800); do
        [ "$(psql_db "SELECT segments_done FROM jobs WHERE id = '$job'")" -gt "$done_before" ] && break
        sleep 0.1
    done
    [ "$(psql_db "SELECT segments_done FROM jobs WHERE id = '$job'")" -gt "$done_before" ] \
        || die "no segment was committed within 180 s of the new coordinator's start"
    step "3. the new coordinator commits segments" working

    # 4. The workers, one at a time: SIGTERM drains one, then the new binary starts in its place.
    local drained registered
    for host in worker-1 worker-2 worker-3; do
        [ "$(psql_db "SELECT state FROM jobs WHERE id = '$job'")" = running ] \
            || die "the job ended before $host was replaced: it did not run throughout" \
                "(hold the workers to less of a core: SPLICE_HOSTS_UPGRADE_CPU, now $upgrade_cpu)"
        drained=$(log_count "$host" "worker stopped.*reason=drained")
        registered=$(log_count "$host" "registered with the coordinator")
        status=0
        stop_host "$host" || status=$?
        [ "$status" = 0 ] && [ "$(log_count "$host" "worker stopped.*reason=drained")" -gt "$drained" ] \
            || die "$host did not drain on SIGTERM (exit $status): $(tail -n 3 "$work/$host.log")"
        put_binary "$host" "$new"
        start_worker "$host"
        throttle "$host"
        wait_for_log "$host" "registered with the coordinator" 60 $((registered + 1))
        step "4. $host drained (exit 0) and replaced" "$host"
    done
    listed=$(list_workers | sort | tr '\n' ';')
    [ "$listed" = "worker-1 yes 3;worker-2 yes 3;worker-3 yes 3;" ] \
        || die "after the workers' upgrade, splice workers lists '$listed', not the new workers at protocol 3"

    check_job upgrade
    step "the job finished; splice workers: every worker speaks protocol 3" finished
    unthrottle
    phase_result+="; steps: ${step_times[*]}"
}

# MARK: - The run

for phase in "${phases[@]}"; do
    declare -F "phase_$phase" >/dev/null || die "no phase $phase (phases: ${all_phases[*]})"
done
started=$(date +%s)
if [ "$build" = 1 ]; then
    image_build
    log "image $splice_image ready in $(($(date +%s) - started)) s"
fi
image_exists "$splice_image" || die "no image $splice_image: run Deploy/test-image.sh (or this script without --no-build)"
image_read_config
if [[ " ${phases[*]} " = *" upgrade "* ]]; then
    find_compat
fi
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
    [[ "$phase_result" != SKIPPED* ]] || line="$phase: skipped (${phase_result#SKIPPED: })"
    summary+=("$line")
done
log "every phase passed (or was skipped, saying why) in $(($(date +%s) - started)) s:"
printf '  %s\n' "${summary[@]}"
