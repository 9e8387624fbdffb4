#!/usr/bin/env bash
# Audio (issue 21): convsvc's converter (bench/convbench, the catalog's Convert file to file)
# against Debian's `flac` and `ffmpeg` on a 60 s 44.1 kHz 16-bit stereo WAV (two tones and pink
# noise, made by ffmpeg), in the same hyperfine invocations, command order rotated per pass.
# Rows: WAV -> FLAC (flac -5), FLAC -> WAV (flac -d; the FLAC made by flac -5), MP3 -> WAV
# (ffmpeg; the MP3 made by ffmpeg at 192 kb/s). Prints median wall times, the ratio
# convsvc / peer, output sizes, and checks the FLAC round trip is bit-exact.
#
#   bench/audio.sh [OUTDIR]      # default /tmp/convsvc-bench-audio
#
# Environment: PASSES=2, RUNS=5, NO_APT=1 to skip apt-get. flac, ffmpeg and hyperfine are
# installed for the benchmark only; convsvc never needs them.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench-audio}
PASSES=${PASSES:-2}
RUNS=${RUNS:-5}

if [ "${NO_APT:-0}" != 1 ]; then
	need=()
	for t in flac ffmpeg hyperfine; do command -v "$t" >/dev/null || need+=("$t"); done
	if [ ${#need[@]} -gt 0 ]; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	fi
fi

mkdir -p "$OUT/bin" "$OUT/in" "$OUT/out" "$OUT/res"
CGO_ENABLED=0 go build -o "$OUT/bin/" ./bench/convbench
B=$OUT/bin/convbench
I=$OUT/in
if [ ! -s "$I/in.wav" ]; then
	ffmpeg -v error -y -filter_complex "sine=f=440:d=60:sample_rate=44100[a];sine=f=659:d=60:sample_rate=44100[b];anoisesrc=d=60:c=pink:a=0.05:r=44100[n];[a][b]amerge=inputs=2[ab];[n]pan=stereo|c0=c0|c1=c0[nn];[ab][nn]amix=inputs=2:normalize=0" -c:a pcm_s16le "$I/in.wav"
fi
[ -s "$I/in.flac" ] || flac -5 -s -f -o "$I/in.flac" "$I/in.wav"
[ -s "$I/in.mp3" ] || ffmpeg -v error -y -i "$I/in.wav" -b:a 192k "$I/in.mp3"

echo "date: $(date -u +%FT%TZ)"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(go version | cut -d' ' -f3)"
echo "tools: $(flac --version), $(ffmpeg -version | head -1 | cut -d' ' -f1-3), $(hyperfine --version)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

O=$OUT/out
row() { # name peer-name convsvc-cmd peer-cmd
	local name=$1 peer=$2
	local -a order=(convsvc "$peer")
	declare -A cmd=([convsvc]=$3 [$peer]=$4)
	for pass in $(seq 1 "$PASSES"); do
		local args=()
		for t in "${order[@]}"; do args+=(-n "$t" "${cmd[$t]}"); done
		hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$OUT/res/$name-$pass.json" "${args[@]}" >/dev/null
		order=("${order[1]}" "${order[0]}")
	done
	python3 - "$name" "$peer" "$OUT/res/$name-"*.json <<'EOF'
import json, statistics, sys
name, peer, files = sys.argv[1], sys.argv[2], sys.argv[3:]
t = {}
for f in files:
    for r in json.load(open(f))["results"]:
        t.setdefault(r["command"], []).extend(r["times"])
c, p = statistics.median(t["convsvc"]), statistics.median(t[peer])
print(f"| {name} | {c:.3f} s | {peer} {p:.3f} s | {c/p:.2f}x |")
EOF
}

echo "| work | convsvc (median) | peer (median) | convsvc / peer |"
echo "|---|---|---|---|"
row wav-flac flac-5 "$B wav flac $I/in.wav $O/c.flac" "flac -5 -s -f -o $O/p.flac $I/in.wav"
row flac-wav flac-d "$B flac wav $I/in.flac $O/c.wav" "flac -d -s -f -o $O/p.wav $I/in.flac"
row mp3-wav ffmpeg "$B mp3 wav $I/in.mp3 $O/c-mp3.wav" "ffmpeg -v error -y -i $I/in.mp3 $O/p-mp3.wav"

echo
echo "sizes: in.wav $(stat -c %s "$I/in.wav"), convsvc FLAC $(stat -c %s "$O/c.flac"), flac -5 $(stat -c %s "$O/p.flac")"
# Bit-exact: convsvc's FLAC decoded by flac -d, and flac -5's FLAC decoded by convsvc, give the
# WAV's samples (compared as raw PCM, headers aside).
flac -d -s -f --force-raw-format --endian=little --sign=signed -o "$O/c-flac.raw" "$O/c.flac"
ffmpeg -v error -y -i "$I/in.wav" -f s16le "$O/in.raw"
ffmpeg -v error -y -i "$O/c.wav" -f s16le "$O/c-wav.raw"
cmp "$O/in.raw" "$O/c-flac.raw" && cmp "$O/in.raw" "$O/c-wav.raw" && echo "round trip: bit-exact (convsvc FLAC via flac -d; flac -5 FLAC via convsvc)"
