#!/usr/bin/env bash
# Runs every benchmark of the performance issues one after the other (never two at once) and
# keeps each report in OUTDIR: images.md, images21.md (the 12 and 100 MP rows beside vips and
# ImageMagick), audio.md, smallrss.md, wasm.md (AVIF, the one-shot PDF and AVIF cold starts),
# apirows.md (the 12 MP rows through the API beside the converter alone and the native tool),
# throughput-small.md, throughput-small-more.md, throughput-big.md, api.md, blob.md,
# gotest.txt. Each step is also runnable alone; see docs/benchmarks.md.
#
#   bench/all.sh [OUTDIR]     # default /tmp/convsvc-bench
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/convsvc-bench}
mkdir -p "$OUT/bin"
# Which sources were measured: other work may land in the tree between runs.
tree() { echo "HEAD $(git rev-parse --short HEAD), sha256 of tracked+untracked *.go outside bench/: $(git ls-files -co --exclude-standard -- '*.go' ':!bench' | sort | xargs cat | sha256sum | cut -c1-12)"; }
log() { echo "[$(date -u +%T)] load $(cut -d' ' -f1-3 /proc/loadavg): $*" | tee -a "$OUT/all.log"; }

# The tree may be mid-edit by others: retry a failed build a few times.
step() {
	local name=$1
	shift
	for try in 1 2 3; do
		log "start $name (try $try); tree: $(tree)"
		if "$@"; then
			log "done $name"
			return 0
		fi
		log "failed $name"
		sleep 60
	done
	return 1
}

step images bench/images.sh "$OUT/images" && cp "$OUT/images/report.md" "$OUT/images.md"
step audio sh -c "bench/audio.sh '$OUT/audio' >'$OUT/audio.md' 2>&1"
step smallrss sh -c "bench/smallrss.sh '$OUT/smallrss' >'$OUT/smallrss.md' 2>&1"
step images21 sh -c "bench/images21.sh '$OUT/images21' >'$OUT/images21.log' 2>&1 && cp '$OUT/images21/report.md' '$OUT/images21.md'"
step wasm sh -c "bench/wasm.sh '$OUT/wasm' >'$OUT/wasm.md' 2>&1"
step apirows sh -c "W='$OUT/apirows' bench/apirows/run.sh 5 >'$OUT/apirows.md' 2>&1"
step build go build -o "$OUT/bin/" ./bench/throughput ./bench/apibench ./bench/blobbench ./bench/serveprof
step throughput-small sh -c "'$OUT/bin/throughput' -classes small:png-jpeg,small:jpeg-png -rounds 3 >'$OUT/throughput-small.md'"
step throughput-small-more sh -c "'$OUT/bin/throughput' -classes small:png-gif,small:png-tiff -rounds 1 >'$OUT/throughput-small-more.md'"
step throughput-webp sh -c "'$OUT/bin/throughput' -classes small:png-webp,small:jpeg-webp -rounds 3 >'$OUT/throughput-webp.md'"
step throughput-big sh -c "'$OUT/bin/throughput' -classes big:png-jpeg,big:jpeg-png -rounds 1 >'$OUT/throughput-big.md'"
step api sh -c "'$OUT/bin/apibench' -rounds 3 >'$OUT/api.md'"
step blob sh -c "'$OUT/bin/blobbench' -rounds 3 >'$OUT/blob.md'"
step profiles sh -c "bench/profile.sh '$OUT/profiles' >'$OUT/profiles.txt' 2>&1"
# Server-side CPU profiles under the API and upload load (bench/serveprof runs service.Run).
step api-profile sh -c "CONVSVC_CPUPROFILE='$OUT/api-server.pprof' '$OUT/bin/apibench' -bin '$OUT/bin/serveprof' -rounds 1 >'$OUT/api-profiled.md'"
step blob-profile sh -c "CONVSVC_CPUPROFILE='$OUT/blob-server.pprof' '$OUT/bin/blobbench' -bin '$OUT/bin/serveprof' -rounds 1 -sizes 1073741824 >'$OUT/blob-profiled.md'"
{
	log "go test benchmarks"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	go test ./store -run XXX -bench . -benchmem -benchtime 2s
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
	go test ./blobstore -run XXX -bench . -benchmem -benchtime 1s
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
	go test ./convert/image -run XXX -bench 'BenchmarkConvert/(png-jpeg|jpeg-png|png-gif|png-tiff|png-webp|jpeg-webp)$' -benchmem -benchtime 5x
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
	go test ./convert/internal/pngstream -run XXX -bench 'Inflate|Decode' -benchmem -benchtime 5x
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/gotest.txt" 2>&1
log "all done"
