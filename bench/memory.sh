#!/usr/bin/env bash
# Memory and cold starts of one-shot `convsvc convert` against the native tools, same inputs,
# same run, command order rotated per pass (docs/benchmarks.md, "AVIF and JPEG XL: cold starts,
# memory after the job, AV1 memory"):
#   - cold starts: testdata samples to/from AVIF and from JPEG XL with the WebAssembly
#     compilation cache off, fresh (compile and write) and warm (load);
#   - 12 MP PNG -> AVIF at quality 60: convsvc against ImageMagick (peak RSS, time, bytes, PSNR);
#   - 100 MP PNG -> JPEG at quality 85: convsvc against `vips copy` (peak RSS, time).
# Each line: tool, case, wall s, user s, peak RSS MiB (/usr/bin/time), load average.
# The warm server's memory after 12 MP jobs is `go test ./e2e -run
# TestE2E_MemoryReturnsAfterTheJobs -v`.
#
#   bench/memory.sh [OUTDIR]        # default /tmp/convsvc-bench-memory
#
# Environment: PASSES=2, CASES="cold avif jpeg100", NO_APT=1 to skip the apt-get step (the
# peers are installed for the benchmark only; convsvc never needs them).
set -euo pipefail
set -f # vips option suffixes like out.jpg[Q=85] are not globs
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench-memory}
PASSES=${PASSES:-2}
CASES=${CASES:-cold avif jpeg100}

if [ "${NO_APT:-0}" != 1 ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libvips-tools imagemagick time >/dev/null
fi
IM=$(command -v convert-im6.q16 || command -v magick || true)
[ -n "$IM" ] || { echo "ImageMagick not found" >&2; exit 1; }

mkdir -p "$OUT/bin" "$OUT/img" "$OUT/out"
CGO_ENABLED=0 go build -o "$OUT/bin/" . ./bench/genimg ./bench/psnr
B=$OUT/bin
[ -s "$OUT/img/big.png" ] || "$B/genimg" -w 4000 -h 3000 -o "$OUT/img/big"
if [[ " $CASES " == *" jpeg100 "* ]]; then
	[ -s "$OUT/img/huge.png" ] || "$B/genimg" -w 10000 -h 10000 -o "$OUT/img/huge"
fi

echo "date: $(date -u +%FT%TZ); $(nproc) cores; $(vips --version); $("$IM" -version | head -1)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure TOOL CASE command...: one run, one line.
measure() {
	local tool=$1 case=$2
	shift 2
	local load
	load=$(cut -d' ' -f1 /proc/loadavg)
	/usr/bin/time -f "%e %U %M" -o "$OUT/time.txt" "$@" >/dev/null 2>"$OUT/err.txt" || {
		cat "$OUT/err.txt" >&2
		return 1
	}
	read -r wall user kb <"$OUT/time.txt"
	printf '%-10s %-28s %6.2f s wall %6.2f s user %6d MiB peak RSS  (load %s)\n' "$tool" "$case" "$wall" "$user" $((kb / 1024)) "$load"
}

# cs: the arguments of a one-shot convsvc convert into $OUT/out.
cs() { CS=("$B/convsvc" convert "$@" --output-dir "$OUT/out" --force); }

for pass in $(seq "$PASSES"); do
	echo "pass $pass"
	for case in $CASES; do
		case $case in
		cold)
			cache=$OUT/wasm-cache-$pass
			rm -rf "$cache"
			for mode in off fresh warm; do
				dir=$cache
				[ "$mode" = off ] && dir=off
				for s in sample.png:avif sample.avif:png sample.jxl:png; do
					cs "testdata/images/${s%%:*}" --to "${s#*:}"
					CONVSVC_WASM_CACHE_DIR=$dir measure convsvc "cold $mode ${s%%:*} -> ${s#*:}" "${CS[@]}"
				done
			done
			;;
		avif)
			# Order rotated per pass.
			runs=("convsvc" "im")
			[ $((pass % 2)) = 0 ] && runs=("im" "convsvc")
			for r in "${runs[@]}"; do
				if [ "$r" = convsvc ]; then
					cs "$OUT/img/big.png" --to avif
					measure convsvc "12MP png -> avif q60" "${CS[@]}"
				else
					measure imagemagick "12MP png -> avif q60" "$IM" "$OUT/img/big.png" -quality 60 "$OUT/out/im.avif"
				fi
			done
			;;
		jpeg100)
			runs=("convsvc" "vips")
			[ $((pass % 2)) = 0 ] && runs=("vips" "convsvc")
			for r in "${runs[@]}"; do
				if [ "$r" = convsvc ]; then
					cs "$OUT/img/huge.png" --to jpeg
					measure convsvc "100MP png -> jpeg q85" "${CS[@]}"
				else
					measure vips "100MP png -> jpeg q85" vips copy "$OUT/img/huge.png" "$OUT/out/vips.jpg[Q=85]"
				fi
			done
			;;
		esac
	done
done

if [[ " $CASES " == *" avif "* ]]; then
	# PSNR against the original, both AVIFs decoded by convsvc.
	cp "$OUT/out/im.avif" "$OUT/out/im-copy.avif"
	"$B/convsvc" convert "$OUT/out/big.avif" --to png --output-dir "$OUT/out" --force >/dev/null
	"$B/convsvc" convert "$OUT/out/im-copy.avif" --to png --output-dir "$OUT/out" --force >/dev/null
	echo "12MP avif bytes: convsvc $(stat -c %s "$OUT/out/big.avif"), imagemagick $(stat -c %s "$OUT/out/im.avif")"
	echo "12MP avif PSNR dB: convsvc $("$B/psnr" "$OUT/img/big.png" "$OUT/out/big.png"), imagemagick $("$B/psnr" "$OUT/img/big.png" "$OUT/out/im-copy.png")"
fi
