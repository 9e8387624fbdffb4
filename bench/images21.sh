#!/usr/bin/env bash
# The image rows of issue 21, convsvc's converter (bench/convbench, the catalog's Convert file
# to file) against libvips and ImageMagick in the same hyperfine invocations (command order
# rotated per pass), plus the peak RSS of each command (/usr/bin/time, median of RSS_RUNS):
#
#   huge-png-jpeg   100 MP (10000x10000) PNG -> JPEG q85   vips copy, IM convert
#   huge-png-tiff   100 MP PNG -> deflate TIFF with predictor   vips copy, IM convert
#   big-tiff-jpeg   12 MP (4000x3000) uncompressed RGB TIFF -> JPEG q85   vips copy, IM convert
#   big-tiled-jpeg  12 MP RGB TIFF in 256x256 deflate+predictor tiles -> JPEG q85   vips copy, IM
#   big-jpeg-800    12 MP JPEG -> 800 px wide PNG          vipsthumbnail, IM -resize
#   small-jpeg-250  1 MP JPEG -> 250 px wide PNG           vipsthumbnail, IM -resize
#   small-jpeg-webp 1 MP JPEG -> WebP q85                  vips copy, IM convert
#   huge-tiff-png   100 MP uncompressed RGB TIFF -> PNG    vips copy, IM convert  (not in the default ROWS)
#   huge-ppm-png    100 MP binary PPM -> PNG               vips copy, IM convert  (not in the default ROWS)
#   big-png-800     12 MP PNG -> 800 px wide JPEG q85      vipsthumbnail, IM -resize
#   big-jpeg-jpeg-800  12 MP JPEG -> 800 px wide JPEG q85 (a same-format job)  vipsthumbnail, IM -resize  (not in the default ROWS)
#   huge-png-800    100 MP PNG -> 800 px wide JPEG q85     vipsthumbnail, IM -resize
#
#   bench/images21.sh [OUTDIR]       # default /tmp/convsvc-bench-images21; report in OUTDIR/report.md
#
# Environment: ROWS (a subset of the names above), PASSES=2, RUNS=3, RSS_RUNS=3, NO_APT=1 to
# skip apt-get, BEFORE=/path/to/convbench built from another revision: also measured, as
# "before", in the same invocations (e.g. git archive main | tar -x -C /tmp/m && (cd /tmp/m &&
# go build -o /tmp/convbench-before ./bench/convbench)). vips, ImageMagick and hyperfine are
# installed for the benchmark only; convsvc never needs them.
set -euo pipefail
set -f # vips option suffixes like out.jpg[Q=85] are not globs
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench-images21}
ROWS=${ROWS:-huge-png-jpeg huge-png-tiff big-tiff-jpeg big-tiled-jpeg big-jpeg-800 small-jpeg-250 small-jpeg-webp big-png-800 huge-png-800}
PASSES=${PASSES:-2}
RUNS=${RUNS:-3}
RSS_RUNS=${RSS_RUNS:-3}
BEFORE=${BEFORE:-}

if [ "${NO_APT:-0}" != 1 ]; then
	need=()
	command -v vips >/dev/null || need+=(libvips-tools)
	command -v convert-im6.q16 >/dev/null || command -v magick >/dev/null || need+=(imagemagick)
	command -v hyperfine >/dev/null || need+=(hyperfine)
	[ -x /usr/bin/time ] || need+=(time)
	if [ ${#need[@]} -gt 0 ]; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	fi
fi
IM=$(command -v convert-im6.q16 || command -v magick || true)
[ -n "$IM" ] || { echo "ImageMagick not found" >&2; exit 1; }

mkdir -p "$OUT/bin" "$OUT/img" "$OUT/out" "$OUT/res"
RES=$OUT/res
rm -f "$RES"/*.json "$RES"/rss.tsv
CGO_ENABLED=0 go build -o "$OUT/bin/" ./bench/genimg ./bench/convbench
B=$OUT/bin
I=$OUT/img
[ -s "$I/big.jpg" ] || "$B/genimg" -w 4000 -h 3000 -o "$I/big"
[ -s "$I/small.jpg" ] || "$B/genimg" -w 1000 -h 1000 -o "$I/small"
[ -s "$I/big.tif" ] || vips copy "$I/big.png" "$I/big.tif"
case " $ROWS " in *" big-tiled-jpeg "*) [ -s "$I/big-tiled.tif" ] || vips copy "$I/big.png" "$I/big-tiled.tif[tile,tile-width=256,tile-height=256,compression=deflate,predictor=horizontal]" ;; esac
case " $ROWS " in *" huge-"*) [ -s "$I/huge.png" ] || "$B/genimg" -w 10000 -h 10000 -o "$I/huge" ;; esac
case " $ROWS " in *" huge-tiff-png "*) [ -s "$I/huge.tif" ] || vips copy "$I/huge.png" "$I/huge.tif" ;; esac
case " $ROWS " in *" huge-ppm-png "*) [ -s "$I/huge.ppm" ] || vips copy "$I/huge.png" "$I/huge.ppm" ;; esac

{
	echo "date: $(date -u +%FT%TZ)"
	echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(go version | cut -d' ' -f3)"
	echo "tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench' || echo ' + uncommitted changes')"
	echo "tools: $(vips --version), $("$IM" -version | head -1 | cut -d' ' -f2-3), $(hyperfine --version)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RES/header.txt"

O=$OUT/out
for row in $ROWS; do
	declare -A cmd=()
	case $row in
	huge-png-jpeg)
		cmd[convsvc]="$B/convbench -q 85 png jpeg $I/huge.png $O/$row-convsvc.jpg"
		cmd[vips]="vips copy $I/huge.png $O/$row-vips.jpg[Q=85]"
		cmd[im]="$IM $I/huge.png -quality 85 $O/$row-im.jpg"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE -q 85 png jpeg $I/huge.png $O/$row-before.jpg" ;;
	huge-png-tiff)
		cmd[convsvc]="$B/convbench png tiff $I/huge.png $O/$row-convsvc.tif"
		cmd[vips]="vips copy $I/huge.png $O/$row-vips.tif[compression=deflate,predictor=horizontal]"
		cmd[im]="$IM $I/huge.png -compress zip -define tiff:predictor=2 $O/$row-im.tif"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE png tiff $I/huge.png $O/$row-before.tif" ;;
	big-tiff-jpeg)
		cmd[convsvc]="$B/convbench -q 85 tiff jpeg $I/big.tif $O/$row-convsvc.jpg"
		cmd[vips]="vips copy $I/big.tif $O/$row-vips.jpg[Q=85]"
		cmd[im]="$IM $I/big.tif -quality 85 $O/$row-im.jpg"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE -q 85 tiff jpeg $I/big.tif $O/$row-before.jpg" ;;
	big-tiled-jpeg)
		cmd[convsvc]="$B/convbench -q 85 tiff jpeg $I/big-tiled.tif $O/$row-convsvc.jpg"
		cmd[vips]="vips copy $I/big-tiled.tif $O/$row-vips.jpg[Q=85]"
		cmd[im]="$IM $I/big-tiled.tif -quality 85 $O/$row-im.jpg"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE -q 85 tiff jpeg $I/big-tiled.tif $O/$row-before.jpg" ;;
	huge-tiff-png | huge-ppm-png)
		ext=tif from=tiff
		[ "$row" = huge-ppm-png ] && ext=ppm from=ppm
		cmd[convsvc]="$B/convbench $from png $I/huge.$ext $O/$row-convsvc.png"
		cmd[vips]="vips copy $I/huge.$ext $O/$row-vips.png"
		cmd[im]="$IM $I/huge.$ext $O/$row-im.png"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE $from png $I/huge.$ext $O/$row-before.png" ;;
	big-jpeg-800 | small-jpeg-250)
		src=$I/big.jpg w=800
		[ "$row" = small-jpeg-250 ] && src=$I/small.jpg w=250
		# Written as PNG by every tool (the row predates same-format jobs; big-jpeg-jpeg-800
		# writes JPEG): at 800 px its encode is small.
		cmd[convsvc]="$B/convbench -width $w jpeg png $src $O/$row-convsvc.png"
		cmd[vips]="vipsthumbnail $src -s $w -o $O/$row-vips.png"
		cmd[im]="$IM $src -resize ${w}x $O/$row-im.png"
		# BEFORE must be a convbench with -width (2fd7c8e and later).
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE -width $w jpeg png $src $O/$row-before.png" ;;
	small-jpeg-webp)
		cmd[convsvc]="$B/convbench -q 85 jpeg webp $I/small.jpg $O/$row-convsvc.webp"
		cmd[vips]="vips copy $I/small.jpg $O/$row-vips.webp[Q=85]"
		cmd[im]="$IM $I/small.jpg -quality 85 $O/$row-im.webp"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE -q 85 jpeg webp $I/small.jpg $O/$row-before.webp" ;;
	big-jpeg-jpeg-800) # shrink-on-load, then the transforms' finisher and a JPEG encode
		cmd[convsvc]="$B/convbench -q 85 -width 800 jpeg jpeg $I/big.jpg $O/$row-convsvc.jpg"
		cmd[vips]="vipsthumbnail $I/big.jpg -s 800 -o $O/$row-vips.jpg[Q=85]"
		cmd[im]="$IM $I/big.jpg -resize 800x -quality 85 $O/$row-im.jpg"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE -q 85 -width 800 jpeg jpeg $I/big.jpg $O/$row-before.jpg" ;;
	big-png-800 | huge-png-800) # strips decoded straight into the resampler (stripscale)
		src=$I/${row%%-*}.png
		cmd[convsvc]="$B/convbench -q 85 -width 800 png jpeg $src $O/$row-convsvc.jpg"
		cmd[vips]="vipsthumbnail $src -s 800 -o $O/$row-vips.jpg[Q=85]"
		cmd[im]="$IM $src -resize 800x -quality 85 $O/$row-im.jpg"
		[ -z "$BEFORE" ] || cmd[before]="$BEFORE -q 85 -width 800 png jpeg $src $O/$row-before.jpg" ;;
	*) echo "unknown row $row" >&2; exit 2 ;;
	esac
	order=("${!cmd[@]}")
	runs=$RUNS
	case $row in small-*) runs=$((RUNS * 4)) ;; esac
	for pass in $(seq 1 "$PASSES"); do
		args=()
		for t in "${order[@]}"; do args+=(-n "$t" "${cmd[$t]}"); done
		echo "== $row pass $pass (load $(cut -d' ' -f1-3 /proc/loadavg))"
		hyperfine -N --style basic --warmup 1 --runs "$runs" --export-json "$RES/$row-$pass.json" "${args[@]}" | grep -E '^(Benchmark|  Time)' || true
		order=("${order[@]:1}" "${order[0]}")
	done
	for t in "${!cmd[@]}"; do
		for i in $(seq 1 "$RSS_RUNS"); do
			/usr/bin/time -f '%M' -o "$RES/time.txt" ${cmd[$t]} >/dev/null
			printf '%s\t%s\t%s\n' "$row" "$t" "$(cat "$RES/time.txt")" >>"$RES/rss.tsv"
		done
	done
	unset cmd
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RES/header.txt"

python3 - "$RES" <<'PY' | tee "$OUT/report.md.body"
import glob, json, os, statistics, sys
res = sys.argv[1]
t, rss = {}, {}
for f in sorted(glob.glob(os.path.join(res, "*.json"))):
    row = os.path.basename(f).rsplit("-", 1)[0]
    for r in json.load(open(f))["results"]:
        t.setdefault(row, {}).setdefault(r["command"], []).extend(r["times"])
for line in open(os.path.join(res, "rss.tsv")):
    row, tool, kib = line.split("\t")
    rss.setdefault(row, {}).setdefault(tool, []).append(int(kib))
print("| row | tool | median wall s | / vips | / IM | peak RSS MiB (median) | RSS / vips |")
print("|---|---|---|---|---|---|---|")
for row in t:
    med = {k: statistics.median(v) for k, v in t[row].items()}
    mr = {k: statistics.median(v) / 1024 for k, v in rss.get(row, {}).items()}
    for tool in sorted(med, key=lambda k: ["convsvc", "before", "vips", "im"].index(k)):
        print(f"| {row} | {tool} | {med[tool]:.3f} | {med[tool]/med['vips']:.2f} | {med[tool]/med['im']:.2f} | "
              f"{mr.get(tool, 0):.0f} | {mr.get(tool, 0)/mr['vips']:.2f} |")
PY
cat "$RES/header.txt" - "$OUT/report.md.body" </dev/null >"$OUT/report.md"
rm -f "$OUT/report.md.body"
