#!/usr/bin/env bash
# The WebAssembly rows of docs/benchmarks.md against the native tools, each row one hyperfine
# run with the native tool beside (ratios are only meaningful within a run on a shared machine):
#   - 12 MP PNG -> AVIF, converter alone (bench/convbench) against `avifenc -j 1` and `-j 2` at
#     the same speed and quantizer, with both outputs' size and PSNR (bench/psnr, decoded by
#     avifdec);
#   - one-shot `convsvc convert` (a cold process), compilation cache warm and empty (a first run
#     ever, --prepare empties it): PDF page 1 -> PNG at 150 dpi beside pdftoppm, and 1 MP
#     PNG -> AVIF beside avifenc.
# BASE=DIR adds the same commands run by a second tree (for before/after rows), e.g. a
# `git archive main | tar -x -C DIR` copy.
#
#   bench/wasm.sh [OUTDIR]        # default /tmp/convsvc-bench-wasm
#
# A first run of a PDF page starts `convsvc precompile` in the background; each empty-cache
# run's --prepare waits for that fill (its lock on the cache directory) before emptying it.
#
# Environment: RUNS=3, PDF=file (default: Debian's libtasn1-doc manual), NO_APT=1,
# ROWS="avif12 pdf avif1" (the rows to run), TAGS=aomsimd (this tree built with the SIMD libaom
# encoder, after convert/internal/wasmcodec/aomenc/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench-wasm}
RUNS=${RUNS:-3}
ROWS=${ROWS:-avif12 pdf avif1}
PDF=${PDF:-/usr/share/doc/libtasn1-doc/libtasn1.pdf}
if [ "${NO_APT:-0}" != 1 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libavif-bin poppler-utils hyperfine libtasn1-doc time >/dev/null
fi
mkdir -p "$OUT/bin" "$OUT/img" "$OUT/out" "$OUT/base"
CGO_ENABLED=0 go build ${TAGS:+-tags "$TAGS"} -o "$OUT/bin/" . ./bench/genimg ./bench/psnr ./bench/convbench
if [ -n "${BASE:-}" ]; then
	(cd "$BASE" && CGO_ENABLED=0 go build -o "$OUT/base/" . ./bench/convbench)
fi
B=$OUT/bin
[ -s "$OUT/img/big.png" ] || "$B/genimg" -w 4000 -h 3000 -o "$OUT/img/big"
[ -s "$OUT/img/small.png" ] || "$B/genimg" -w 1000 -h 1000 -o "$OUT/img/small"
cp "$PDF" "$OUT/img/doc.pdf"
I=$OUT/img O=$OUT/out
AVIFENC="avifenc -s 10 -y 420 --min 25 --max 25"
echo "date: $(date -u +%FT%TZ); $(nproc) cores; $(avifenc --version 2>&1 | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"

# Warm caches of their own for this tree and the base one.
export CONVSVC_WASM_CACHE_DIR=$OUT/cache
"$B/convsvc" precompile
if [ -n "${BASE:-}" ]; then
	CONVSVC_WASM_CACHE_DIR=$OUT/cache-base "$OUT/base/convbench" png avif "$I/small.png" "$O/warm.avif"
	CONVSVC_WASM_CACHE_DIR=$OUT/cache-base "$OUT/base/convbench" pdf png "$I/doc.pdf" "$O/warm.png"
fi
base() { # the base tree's command for the same row, if any
	[ -n "${BASE:-}" ] && echo "env CONVSVC_WASM_CACHE_DIR=$OUT/cache-base${2:-} $OUT/base/$1"
}

row() { echo; echo "== $1 (load $(cut -d' ' -f1-3 /proc/loadavg))"; }

if [[ " $ROWS " == *" avif12 "* ]]; then
row "12 MP PNG -> AVIF, converter alone"
cmds=("$AVIFENC -j 1 $I/big.png $O/native.avif" "$B/convbench png avif $I/big.png $O/convsvc.avif" "$AVIFENC -j 2 $I/big.png $O/native2.avif")
[ -n "${BASE:-}" ] && cmds+=("$(base "convbench png avif $I/big.png $O/base.avif")")
hyperfine -N --runs "$RUNS" --export-json "$OUT/avif12.json" "${cmds[@]}"
for f in native convsvc ${BASE:+base}; do
	avifdec "$O/$f.avif" "$O/$f-dec.png" >/dev/null
	echo "$f: $(stat -c %s "$O/$f.avif") bytes, $("$B/psnr" "$I/big.png" "$O/$f-dec.png") dB (avifdec)"
done
/usr/bin/time -f "convbench peak RSS %M KB" "$B/convbench" png avif "$I/big.png" "$O/convsvc.avif"
/usr/bin/time -f "avifenc peak RSS %M KB" $AVIFENC -j 1 "$I/big.png" "$O/native.avif" >/dev/null
fi

for first in warm first; do
	prep=true
	# Wait for a background fill (flock on the directory), then empty the cache.
	[ $first = first ] && prep="sh -c 'for d in $OUT/cache-first $OUT/cache-base-first; do [ -d \$d ] && flock \$d true; rm -rf \$d; done; true'"
	sfx=""
	[ $first = first ] && sfx=-first
	if [[ " $ROWS " == *" pdf "* ]]; then
	row "one-shot PDF page 1 -> PNG, cache $first"
	cmds=("pdftoppm -png -r 150 -f 1 -l 1 $I/doc.pdf $O/p" "env CONVSVC_WASM_CACHE_DIR=$OUT/cache$sfx $B/convsvc convert $I/doc.pdf --to png --page 1 --dpi 150 -o $O/o.png --force")
	[ -n "${BASE:-}" ] && cmds+=("$(base "convsvc convert $I/doc.pdf --to png --page 1 --dpi 150 -o $O/b.png --force" "$sfx")")
	hyperfine -N --runs "$RUNS" --prepare "$prep" --export-json "$OUT/pdf-$first.json" "${cmds[@]}"
	fi
	[[ " $ROWS " == *" avif1 "* ]] || continue
	row "one-shot 1 MP PNG -> AVIF, cache $first"
	cmds=("$AVIFENC -j 1 $I/small.png $O/a.avif" "env CONVSVC_WASM_CACHE_DIR=$OUT/cache$sfx $B/convsvc convert $I/small.png --to avif -o $O/o.avif --force")
	[ -n "${BASE:-}" ] && cmds+=("$(base "convsvc convert $I/small.png --to avif -o $O/b.avif --force" "$sfx")")
	hyperfine -N --runs "$RUNS" --prepare "$prep" --export-json "$OUT/avif1-$first.json" "${cmds[@]}"
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
