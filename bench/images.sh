#!/usr/bin/env bash
# Image conversion: convsvc's converter (bench/convbench, the catalog's Convert file to file)
# against `vips copy` and ImageMagick's `convert`, same inputs, same hyperfine invocation.
# Per size (big = 4000x3000, small = 1000x1000) and pair: median wall time over every run,
# ratios to vips and IM, CPU time (hyperfine user+sys), peak RSS (/usr/bin/time), output
# bytes, PSNR against the generated original, and convsvc's warm in-process time.
#
#   bench/images.sh [OUTDIR]        # default /tmp/convsvc-bench-images; report in OUTDIR/report.md
#
# Environment: SIZES="big small", PAIRS="png-jpeg jpeg-png png-gif png-tiff png-webp jpeg-webp",
# PASSES=2 (hyperfine invocations per pair, command order rotated), RUNS_BIG=3, RUNS_SMALL=10,
# RSS_RUNS=3, NO_APT=1 to skip the apt-get step. The tools are installed here for the benchmark
# only; convsvc never needs them.
set -euo pipefail
set -f # vips option suffixes like out.jpg[Q=85] are not globs
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench-images}
SIZES=${SIZES:-big small}
PAIRS=${PAIRS:-png-jpeg jpeg-png png-gif png-tiff png-webp jpeg-webp}
PASSES=${PASSES:-2}
RUNS_BIG=${RUNS_BIG:-3}
RUNS_SMALL=${RUNS_SMALL:-10}
RSS_RUNS=${RSS_RUNS:-3}

if [ "${NO_APT:-0}" != 1 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libvips-tools imagemagick hyperfine time >/dev/null
fi
# Debian's `convert` is an alternatives link; name the ImageMagick 6 binary itself.
IM=$(command -v convert-im6.q16 || command -v magick || true)
[ -n "$IM" ] || { echo "ImageMagick not found" >&2; exit 1; }

mkdir -p "$OUT/bin" "$OUT/img" "$OUT/out" "$OUT/res"
RES=$OUT/res
rm -f "$RES"/hf-*.json "$RES"/metrics.tsv
CGO_ENABLED=0 go build -o "$OUT/bin/" ./bench/genimg ./bench/convbench ./bench/psnr ./bench/imgreport
B=$OUT/bin
[ -s "$OUT/img/big.jpg" ] || "$B/genimg" -w 4000 -h 3000 -o "$OUT/img/big"
[ -s "$OUT/img/small.jpg" ] || "$B/genimg" -w 1000 -h 1000 -o "$OUT/img/small"

metric() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES/metrics.tsv"; }
load1() { cut -d' ' -f1 /proc/loadavg; }

{
	echo "date: $(date -u +%FT%TZ)"
	echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r), $(go version | cut -d' ' -f3)"
	echo "tools: $(vips --version), $("$IM" -version | head -1), $(hyperfine --version)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$RES/header.txt"
cat "$RES/header.txt"

for size in $SIZES; do
	runs=$RUNS_SMALL warm=1 repeat=3
	[ "$size" = big ] && runs=$RUNS_BIG repeat=2
	for pair in $PAIRS; do
		from=${pair%-*} to=${pair#*-}
		src=$OUT/img/$size.png
		[ "$from" = jpeg ] && src=$OUT/img/$size.jpg
		case $to in
		jpeg) ext=jpg vopt='[Q=85]' iopt='-quality 85' q='-q 85' ;;
		png) ext=png vopt='' iopt='' q='' ;;
		gif) ext=gif vopt='' iopt='-dither FloydSteinberg' q='' ;;
		tiff) ext=tif vopt='[compression=deflate]' iopt='-compress Zip' q='' ;;
		webp) ext=webp vopt='[Q=85]' iopt='-quality 85' q='-q 85' ;;
		esac
		o=$OUT/out/$size-$pair
		declare -A cmd=(
			[convsvc]="$B/convbench $q $from $to $src $o-convsvc.$ext"
			[vips]="vips copy $src $o-vips.$ext$vopt"
			[im]="$IM $src $iopt $o-im.$ext"
		)
		order=(convsvc vips im)
		for pass in $(seq 1 "$PASSES"); do
			args=()
			for t in "${order[@]}"; do args+=(-n "$t" "${cmd[$t]}"); done
			metric "$size" "$pair" vips load "$(load1)"
			echo "== $size $pair pass $pass (load $(cut -d' ' -f1-3 /proc/loadavg))"
			hyperfine -N --style basic --warmup "$warm" --runs "$runs" --export-json "$RES/hf-$size-$pair-$pass.json" "${args[@]}" | grep -E '^(Benchmark|  Time)'
			order=("${order[@]:1}" "${order[0]}")
		done
		for t in convsvc vips im; do
			for i in $(seq 1 "$RSS_RUNS"); do
				/usr/bin/time -f '%M %U %S' -o "$RES/time.txt" ${cmd[$t]} >/dev/null
				read -r rss user sys <"$RES/time.txt"
				metric "$size" "$pair" "$t" rss_kib "$rss"
				metric "$size" "$pair" "$t" cpu_s "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')"
			done
			out=$o-$t.$ext
			metric "$size" "$pair" "$t" out_bytes "$(stat -c %s "$out")"
			metric "$size" "$pair" "$t" psnr "$("$B/psnr" "$OUT/img/$size.png" "$out")"
		done
		# The same conversion warm, in one process: what it costs inside the running server.
		w=$("$B/convbench" $q -repeat "$repeat" "$from" "$to" "$src" "$o-convsvc.$ext" 2>&1 | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
		metric "$size" "$pair" convsvc warm "$(awk -v w="$w" 'BEGIN{printf "%.3f", w/1000}')"
		unset cmd
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/header.txt"
{
	cat "$RES/header.txt"
	echo
	"$B/imgreport" "$RES"
} | tee "$OUT/report.md"
