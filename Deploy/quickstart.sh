#!/usr/bin/env bash
# The main job on the cluster, on this one machine: sets up the machine (Deploy/setup.sh), builds
# Splice in release mode, starts a coordinator (with its embedded PostgreSQL) and two workers on
# loopback, generates a 30 s test clip (moving pattern + a non-periodic FM sweep over pink noise),
# submits it with `splice submit --wait`, prints where the output is and a one-line check of it made
# by ffprobe, and stops everything again — also on Ctrl-C or on any failure.
#
# Everything lives in out/quickstart (SPLICE_QUICKSTART_DIR): the clip, the output, the logs, the
# coordinator's state (its database) and the spool the workers share with it. Delete that folder to
# start from scratch. Ports 7450 (workers), 7451 (API), 9450 (the coordinator's status page and
# metrics) and 9451-9452 (the workers' metrics) on 127.0.0.1 must be free.
set -euo pipefail
cd "$(dirname "$0")/.."
source Deploy/setup.sh

work="${SPLICE_QUICKSTART_DIR:-$PWD/out/quickstart}"
log_level="${SPLICE_LOG_LEVEL:-info}"
# The daemons and the client take their settings from SPLICE_* variables: start from none, so a
# database URL or key file set in this shell cannot turn the loopback quick start into something else.
for variable in $(compgen -v SPLICE_); do unset "$variable"; done
export SPLICE_LOG_LEVEL="$log_level"

workers_endpoint=tcp://127.0.0.1:7450
api_endpoint=tcp://127.0.0.1:7451
state="$work/state"
spool="$work/spool"
logs="$work/logs"
source_clip="$work/clip-30s.mp4"
output="$work/output.mp4"
mkdir -p "$work" "$logs" "$spool"

# PostgreSQL refuses to run as root, so as root the embedded server runs as `postgres`, which must
# be able to reach the state folder. A checkout under /root is not reachable: keep the state elsewhere.
if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1 && ! runuser -u postgres -- test -x "$work"; then
    state="/var/tmp/splice-quickstart/state"
    echo "quickstart: user postgres cannot reach $work; keeping the coordinator's state in $state" >&2
fi
mkdir -p "$state"
chmod 755 "$state"

echo "quickstart: building Splice (release)" >&2
set +e
swift build -c release --product splice 2>&1 | grep -vE '^(\[[0-9]+/[0-9]+\]|Building|Compiling|Write|Emitting)'
build_status=${PIPESTATUS[0]}
set -e
if [ "$build_status" -ne 0 ]; then
    echo "quickstart: the build failed (exit $build_status); see the messages above" >&2
    exit 1
fi
splice="$(swift build -c release --show-bin-path)/splice"

# MARK: - Stopping everything, however the script ends
# The daemons run in sessions of their own (setsid), so a Ctrl-C in this terminal reaches only the
# script and `splice submit`; the script then stops each daemon with one SIGTERM (a second signal
# would make a daemon skip its graceful shutdown).

coordinator_pid=""
worker_pids=()

# Sends SIGTERM to a daemon and waits up to $2 seconds for it to exit; then SIGKILL.
stop_daemon() {
    local pid=$1 patience=$2 name=$3
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((patience * 10))); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    echo "quickstart: $name did not stop within ${patience}s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# The coordinator stops its embedded PostgreSQL when it exits gracefully; after a SIGKILL this does.
stop_embedded_postgres() {
    local data="$state/postgres/data"
    [ -f "$data/postmaster.pid" ] || return 0
    local pg_ctl
    pg_ctl=$(ls /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | sort -V | tail -n 1)
    [ -n "$pg_ctl" ] || return 0
    echo "quickstart: stopping the embedded PostgreSQL the coordinator left running" >&2
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$pg_ctl" stop -D "$data" -m fast -w >/dev/null 2>&1 || true
    else
        "$pg_ctl" stop -D "$data" -m fast -w >/dev/null 2>&1 || true
    fi
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    # Workers first (they drain: running segments finish or are handed back), then the coordinator.
    for pid in "${worker_pids[@]}"; do stop_daemon "$pid" 30 "worker $pid"; done
    if [ -n "$coordinator_pid" ]; then stop_daemon "$coordinator_pid" 30 coordinator; fi
    stop_embedded_postgres
    if [ "$status" -ne 0 ]; then
        echo "quickstart: stopped (exit $status); the daemons' logs are in $logs" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits up to $3 seconds for $2 to appear in log $1 while process $4 lives.
wait_for_log() {
    local log=$1 text=$2 patience=$3 pid=$4 name=$5
    for _ in $(seq $((patience * 10))); do
        grep -q "$text" "$log" 2>/dev/null && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "quickstart: $name exited before it was ready; the end of $log:" >&2
            tail -n 20 "$log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "quickstart: $name was not ready after ${patience}s; the end of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
}

# MARK: - The clip (first: if this fails there is nothing to stop)

if [ ! -s "$source_clip" ]; then
    echo "quickstart: generating a 30 s 1280x720 test clip at $source_clip" >&2
    ffmpeg -v error -y \
        -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=30" \
        -f lavfi -i "aevalsrc=exprs='0.3*sin(2*PI*800*t+(600/0.37)*sin(2*PI*0.37*t))':s=48000:d=30[s];anoisesrc=c=pink:a=0.1:r=48000:d=30[n];[s][n]amix=inputs=2:normalize=0[out0]" \
        -c:v libx264 -preset veryfast -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 "$source_clip.partial.mp4"
    mv "$source_clip.partial.mp4" "$source_clip"
fi

# MARK: - The cluster

echo "quickstart: starting a coordinator on $api_endpoint (state in $state)" >&2
setsid "$splice" coordinator --state-dir "$state" --spool "$spool" \
    --workers-endpoint "$workers_endpoint" --api-endpoint "$api_endpoint" \
    --metrics-endpoint 127.0.0.1:9450 2>"$logs/coordinator.log" &
coordinator_pid=$!
wait_for_log "$logs/coordinator.log" "coordinator ready" 120 "$coordinator_pid" "the coordinator"

cores=$(nproc)
slots=$(( cores / 2 > 0 ? cores / 2 : 1 ))
for n in 1 2; do
    # Each worker its own metrics port (9451, 9452), fixed so the line below can name them (left to
    # the default, the second would take the next free port after 9451 and log it).
    setsid "$splice" worker --coordinator "$workers_endpoint" --spool "$spool" --slots "$slots" \
        --name "quickstart-$n" --drain-timeout 10 --metrics-endpoint "127.0.0.1:$((9450 + n))" \
        2>"$logs/worker-$n.log" &
    worker_pids+=($!)
done
for n in 1 2; do
    wait_for_log "$logs/worker-$n.log" "worker ready" 30 "${worker_pids[$((n - 1))]}" "worker $n"
done
echo "quickstart: 2 workers with $slots slot(s) each; logs in $logs" >&2
echo "quickstart: status page at http://127.0.0.1:9450/ (metrics: /metrics there and on :9451, :9452)" >&2

# MARK: - The job

rm -f "$output"
"$splice" submit "$source_clip" "$output" --coordinator "$api_endpoint" --wait \
    --video-codec h264 --crf 23 --preset veryfast --audio-codec aac --faststart --segment-seconds 6

frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$output")
duration=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$output")
samples=$(ffmpeg -v error -i "$output" -map 0:a:0 -ac 1 -f s16le - | wc -c)
source_frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$source_clip")
source_samples=$(ffmpeg -v error -i "$source_clip" -map 0:a:0 -ac 1 -f s16le - | wc -c)
echo "output: $output"
echo "verify: frames=$frames duration=${duration}s audio_samples=$((samples / 2))" \
    "(source: frames=$source_frames audio_samples=$((source_samples / 2)))"
