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
# Environment: PASSES=2, RUNS=5, NO_APT=1 to skip apt-get; BEFORE=<git revision> also builds
# convbench at that revision and times it in the same hyperfine invocations ("before" column);
# ONLY=mp3-wav (or another row name) runs one row. flac, ffmpeg and hyperfine are
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
BB=
if [ -n "${BEFORE:-}" ]; then
	rm -rf "$OUT/before" && mkdir -p "$OUT/before"
	git archive "$BEFORE" | tar -x -C "$OUT/before"
	(cd "$OUT/before" && CGO_ENABLED=0 go build -o "$OUT/bin/convbench-before" ./bench/convbench)
	BB=$OUT/bin/convbench-before
fi
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
row() { # name peer-name convsvc-args peer-cmd (convsvc-args: FROM TO IN OUT for convbench)
	local name=$1 peer=$2
	if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ]; then return; fi
	local -a order=(convsvc "$peer")
	declare -A cmd=([convsvc]="$B $3" [$peer]=$4)
	if [ -n "$BB" ]; then
		order+=(before)
		cmd[before]="$BB $3"
	fi
	for pass in $(seq 1 "$PASSES"); do
		local args=()
		for t in "${order[@]}"; do args+=(-n "$t" "${cmd[$t]}"); done
		hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$OUT/res/$name-$pass.json" "${args[@]}" >/dev/null
		order=("${order[@]:1}" "${order[0]}")
	done
	python3 - "$name" "$peer" "$OUT/res/$name-"*.json <<'EOF'
import json, statistics, sys
name, peer, files = sys.argv[1], sys.argv[2], sys.argv[3:]
t, cpu = {}, {}
for f in files:
    for r in json.load(open(f))["results"]:
        t.setdefault(r["command"], []).extend(r["times"])
        cpu.setdefault(r["command"], []).append(r["user"] + r["system"])  # mean per invocation
med = lambda k: statistics.median(t[k])
mcpu = lambda k: statistics.median(cpu[k])
c, p = med("convsvc"), med(peer)
before = f"{med('before'):.3f} s ({mcpu('before'):.3f}) | " if "before" in t else ""
print(f"| {name} | {before}{c:.3f} s ({mcpu('convsvc'):.3f}) | {peer} {p:.3f} s ({mcpu(peer):.3f}) | {c/p:.2f}x ({mcpu('convsvc')/mcpu(peer):.2f}x) |")
EOF
}

echo "median wall time (mean CPU time, user+sys, median over passes)"
if [ -n "$BB" ]; then
	echo "| work | before ($BEFORE) | convsvc | peer | convsvc / peer (CPU) |"
	echo "|---|---|---|---|---|"
else
	echo "| work | convsvc | peer | convsvc / peer (CPU) |"
	echo "|---|---|---|---|"
fi
row wav-flac flac-5 "wav flac $I/in.wav $O/c.flac" "flac -5 -s -f -o $O/p.flac $I/in.wav"
row flac-wav flac-d "flac wav $I/in.flac $O/c.wav" "flac -d -s -f -o $O/p.wav $I/in.flac"
row mp3-wav ffmpeg "mp3 wav $I/in.mp3 $O/c-mp3.wav" "ffmpeg -v error -y -i $I/in.mp3 $O/p-mp3.wav"

if [ -z "${ONLY:-}" ] || [ "$ONLY" = mp3-wav ]; then
	# MP3 is lossy and decoders differ in float rounding and in the encoder delay they trim
	# (ffmpeg honours the LAME/Xing gapless header, convsvc does not): align by the best offset,
	# then the largest sample difference and the PSNR against full scale.
	ffmpeg -v error -y -i "$O/c-mp3.wav" -f s16le "$O/c-mp3.raw"
	ffmpeg -v error -y -i "$O/p-mp3.wav" -f s16le "$O/p-mp3.raw"
	python3 - "$O/c-mp3.raw" "$O/p-mp3.raw" <<'EOF'
import array, math, sys
a, b = array.array("h"), array.array("h")
a.frombytes(open(sys.argv[1], "rb").read()); b.frombytes(open(sys.argv[2], "rb").read())
def err(off, step, lo=0, hi=None):  # stereo frames: a[2*(i+off)] vs b[2*i]
    n = min(len(a) // 2 - max(off, 0), len(b) // 2 - max(-off, 0))
    r = range(lo, min(n, hi or n), step)
    se = mx = 0
    for i in r:
        for c in (0, 1):
            d = a[2 * (i + max(off, 0)) + c] - b[2 * (i + max(-off, 0)) + c]
            se += d * d; mx = max(mx, abs(d))
    return se / (2 * len(r)), mx, n
best = min(range(-500, 2501), key=lambda o: err(o, 31, 44100, 88200)[0])
mse, mx, n = err(best, 1)
psnr = 10 * math.log10(32767 ** 2 / mse) if mse else float("inf")
print(f"mp3-wav PCM vs ffmpeg: offset {best} frames (convsvc {len(a)//2}, ffmpeg {len(b)//2} frames), max sample difference {mx}, PSNR {psnr:.1f} dB over {n} frames")
EOF
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${ONLY:-}" ] && exit 0

echo
echo "sizes: in.wav $(stat -c %s "$I/in.wav"), convsvc FLAC $(stat -c %s "$O/c.flac"), flac -5 $(stat -c %s "$O/p.flac")"
# Bit-exact: convsvc's FLAC decoded by flac -d, and flac -5's FLAC decoded by convsvc, give the
# WAV's samples (compared as raw PCM, headers aside).
flac -d -s -f --force-raw-format --endian=little --sign=signed -o "$O/c-flac.raw" "$O/c.flac"
ffmpeg -v error -y -i "$I/in.wav" -f s16le "$O/in.raw"
ffmpeg -v error -y -i "$O/c.wav" -f s16le "$O/c-wav.raw"
cmp "$O/in.raw" "$O/c-flac.raw" && cmp "$O/in.raw" "$O/c-wav.raw" && echo "round trip: bit-exact (convsvc FLAC via flac -d; flac -5 FLAC via convsvc)"
