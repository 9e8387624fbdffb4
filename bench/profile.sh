#!/usr/bin/env bash
# CPU profiles of convsvc's image converters on the 12-megapixel input (bench/convbench
# -cpuprofile), printed as pprof's top functions. Profiles stay in OUTDIR for `go tool pprof`.
#
#   bench/profile.sh [OUTDIR]     # default /tmp/convsvc-bench-profiles
#   PAIRS="jpeg-png png-gif" bench/profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench-profiles}
PAIRS=${PAIRS:-png-webp png-gif jpeg-png png-jpeg png-tiff}
mkdir -p "$OUT"
CGO_ENABLED=0 go build -o "$OUT/" ./bench/genimg ./bench/convbench
[ -s "$OUT/big.jpg" ] || "$OUT/genimg" -w 4000 -h 3000 -o "$OUT/big"
echo "date: $(date -u +%FT%TZ), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in $PAIRS; do
	from=${pair%-*} to=${pair#*-}
	src=$OUT/big.png
	[ "$from" = jpeg ] && src=$OUT/big.jpg
	echo "=== $pair (load $(cut -d' ' -f1-3 /proc/loadavg))"
	/usr/bin/time -f "wall %e s, user %U s, sys %S s, peak RSS %M KiB" \
		"$OUT/convbench" -q 85 -cpuprofile "$OUT/$pair.pprof" "$from" "$to" "$src" "$OUT/out-$pair.$to"
	go tool pprof -top -nodecount=15 "$OUT/convbench" "$OUT/$pair.pprof" 2>/dev/null | sed -n '/flat%/,$p'
	go tool pprof -top -cum -nodecount=40 "$OUT/convbench" "$OUT/$pair.pprof" 2>/dev/null |
		grep -E 'convert/image\.(decode|encode|ditherFS|medianPalette|To8Bit|draw)|image/(png|jpeg|gif)\.(\(\*encoder\)\.writeImage|\(\*decoder\)\.readImagePass|Encode)|x/image/tiff\.Encode|webp\.Encode' || true
done
