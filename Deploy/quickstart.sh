#!/usr/bin/env bash
# The main job on an embedded default: sets up the machine (Deploy/setup.sh), builds Splice in
# release mode, generates a 30 s test clip (moving pattern + non-periodic audio) and transcodes it
# with `splice export`, then prints where the output is and a one-line check of it made by ffprobe.
set -euo pipefail
cd "$(dirname "$0")/.."
source Deploy/setup.sh

swift build -c release --product splice 2>&1 | grep -vE '^(\[[0-9]+/[0-9]+\]|Building|Compiling|Write|Emitting)' || true
splice="$(swift build -c release --show-bin-path)/splice"

work="${SPLICE_QUICKSTART_DIR:-$PWD/out/quickstart}"
mkdir -p "$work"
source_clip="$work/source.mp4"
output="$work/output.mp4"
if [ ! -s "$source_clip" ]; then
    echo "quickstart: generating a 30 s 1280x720 test clip at $source_clip" >&2
    ffmpeg -v error -y \
        -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=30" \
        -f lavfi -i "aevalsrc=exprs='0.5*sin(2*PI*100*1.7/log(80)*(exp(log(80)*mod(t\,1.7)/1.7)-1))':s=48000:d=30[s];anoisesrc=c=pink:a=0.03:r=48000:d=30[n];[s][n]amix=inputs=2:normalize=0[out0]" \
        -c:v libx264 -preset veryfast -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -ac 2 "$source_clip"
fi

"$splice" export "$source_clip" "$output" --video-codec h264 --crf 23 --preset veryfast --audio-codec aac --faststart

frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$output")
duration=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$output")
samples=$(ffmpeg -v error -i "$output" -map 0:a:0 -ac 1 -f s16le - | wc -c)
echo "output: $output"
echo "verify: frames=$frames duration=${duration}s audio_samples=$((samples / 2)) (source frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$source_clip"))"
