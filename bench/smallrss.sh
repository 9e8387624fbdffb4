#!/usr/bin/env bash
# Peak RSS of the small rows of issue 36 (docs/benchmarks.md, the Memory table and "Issue 36: TIFF -> JPEG ..."):
# bench/convbench (the catalog's Convert file to file, one fresh process) against the native tool
# on the same input, plus convbench's floor: the same binary exiting on a missing input, which is
# what the process costs before any converter runs (Go runtime, package initialisation and the
# pages of the one binary that holds every converter). The same rows again with convbench built
# with the family alone (-tags convbench_audio / convbench_image), and those binaries' floors:
# the converter's own memory, without the rest of the one binary.
#   - WAV 60 s -> FLAC (flac -5), with output sizes;
#   - 1 MP JPEG q85 -> WebP q80 (cwebp -q 80), with output sizes;
#   - MP3 60 s 192k -> WAV (ffmpeg).
# Each line: case, tool, peak RSS KiB (median of RUNS runs of /usr/bin/time -f %M), user s.
#
#   bench/smallrss.sh [OUTDIR]        # default /tmp/convsvc-bench-smallrss
#
# Environment: RUNS=3, NO_APT=1 to skip apt-get (flac, ffmpeg, webp and time are installed for
# the benchmark only; convsvc never needs them). The convbench binary is built like the release
# (-tags nodynamic).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench-smallrss}
RUNS=${RUNS:-3}

if [ "${NO_APT:-0}" != 1 ]; then
	need=()
	for t in flac ffmpeg cwebp /usr/bin/time; do command -v "$t" >/dev/null || need+=("$(basename "$t" | sed 's/cwebp/webp/')"); done
	if [ ${#need[@]} -gt 0 ]; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	fi
fi
mkdir -p "$OUT/bin" "$OUT/in" "$OUT/out"
CGO_ENABLED=0 go build -tags nodynamic -o "$OUT/bin/" ./bench/convbench ./bench/genimg
CGO_ENABLED=0 go build -tags nodynamic,convbench_audio -o "$OUT/bin/convbench-audio" ./bench/convbench
CGO_ENABLED=0 go build -tags nodynamic,convbench_image -o "$OUT/bin/convbench-image" ./bench/convbench
B=$OUT/bin/convbench I=$OUT/in O=$OUT/out BA=$OUT/bin/convbench-audio BI=$OUT/bin/convbench-image
if [ ! -s "$I/in.wav" ]; then
	ffmpeg -v error -y -filter_complex "sine=f=440:d=60:sample_rate=44100[a];sine=f=659:d=60:sample_rate=44100[b];anoisesrc=d=60:c=pink:a=0.05:r=44100[n];[a][b]amerge=inputs=2[ab];[n]pan=stereo|c0=c0|c1=c0[nn];[ab][nn]amix=inputs=2:normalize=0" -c:a pcm_s16le "$I/in.wav"
fi
[ -s "$I/in.mp3" ] || ffmpeg -v error -y -i "$I/in.wav" -b:a 192k "$I/in.mp3"
if [ ! -s "$I/small.jpg" ]; then
	"$OUT/bin/genimg" -w 1000 -h 1000 -o "$I/small"
	"$B" -q 85 png jpeg "$I/small.png" "$I/small.jpg"
fi

echo "date: $(date -u +%FT%TZ), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
rss() { # case tool cmd...: median peak RSS and user time over RUNS runs
	local c=$1 t=$2
	shift 2
	for _ in $(seq "$RUNS"); do /usr/bin/time -f '%M %U' "$@" 2>&1 >/dev/null | tail -1; done |
		sort -n | awk -v c="$c" -v t="$t" '{m[NR]=$1; u[NR]=$2} END {i=int((NR+1)/2); printf "%s | %s | %d KiB | %s s\n", c, t, m[i], u[i]}'
}
echo "case | tool | peak RSS | user"
rss floor convbench "$B" wav flac "$I/missing.wav" "$O/x.flac" || true
rss wav-flac convbench "$B" wav flac "$I/in.wav" "$O/c.flac"
rss wav-flac flac-5 flac -5 -s -f -o "$O/p.flac" "$I/in.wav"
rss jpeg-webp convbench "$B" -q 80 jpeg webp "$I/small.jpg" "$O/c.webp"
rss jpeg-webp cwebp cwebp -quiet -q 80 "$I/small.jpg" -o "$O/p.webp"
rss mp3-wav convbench "$B" mp3 wav "$I/in.mp3" "$O/c.wav"
rss mp3-wav ffmpeg ffmpeg -v error -y -i "$I/in.mp3" "$O/p.wav"
rss floor convbench-audio "$BA" wav flac "$I/missing.wav" "$O/x.flac" || true
rss wav-flac convbench-audio "$BA" wav flac "$I/in.wav" "$O/ca.flac"
rss mp3-wav convbench-audio "$BA" mp3 wav "$I/in.mp3" "$O/ca.wav"
rss floor convbench-image "$BI" jpeg webp "$I/missing.jpg" "$O/x.webp" || true
rss jpeg-webp convbench-image "$BI" -q 80 jpeg webp "$I/small.jpg" "$O/ci.webp"
cmp -s "$O/c.flac" "$O/ca.flac" && cmp -s "$O/c.webp" "$O/ci.webp" || echo "the one-family convbench wrote other bytes"
echo "sizes: convsvc FLAC $(stat -c %s "$O/c.flac"), flac -5 $(stat -c %s "$O/p.flac"); convsvc WebP $(stat -c %s "$O/c.webp"), cwebp $(stat -c %s "$O/p.webp")"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
