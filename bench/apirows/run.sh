#!/usr/bin/env bash
# run.sh [N]: the API rows of docs/benchmarks.md in one invocation, for bench/all.sh: builds
# convsvc and convbench from this tree (and from BASE=DIR, another tree, as "api-base"; without
# it both servers are this tree's), makes the 12 MP inputs (bench/genimg's big.png and big.jpg,
# and big.tif, deflate with the horizontal predictor, by vips), starts the two warm servers
# with serve.sh, runs rows.py N (default 5) and stops them. Each row has the converter alone
# (convbench), the two servers and the native tool (vipsthumbnail, vips copy, avifenc) beside.
#
#   W=/tmp/convsvc-apirows [BASE=DIR] [ROWS=tiff] [NO_APT=1] bench/apirows/run.sh [N]
#
# The native tools (libvips-tools, libavif-bin) are installed with apt-get when missing, unless
# NO_APT=1; they are for the benchmark only.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${NO_APT:-0}" != 1 ] && ! { command -v vips && command -v vipsthumbnail && command -v avifenc; } >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libvips-tools libavif-bin >/dev/null
fi
export W=${W:-/tmp/convsvc-apirows}
N=${1:-5}
mkdir -p "$W/bin" "$W/in"
export CGO_ENABLED=0
go build -o "$W/bin/convsvc" . && go build -o "$W/bin/" ./bench/convbench ./bench/genimg
base_bin=$W/bin/convsvc
if [ -n "${BASE:-}" ]; then
	(cd "$BASE" && go build -o "$W/bin/convsvc-base" .)
	base_bin=$W/bin/convsvc-base
fi
[ -s "$W/in/big.jpg" ] || "$W/bin/genimg" -w 4000 -h 3000 -o "$W/in/big"
[ -s "$W/in/big.tif" ] || vips copy "$W/in/big.png" "$W/in/big.tif[compression=deflate,predictor=horizontal]"
for p in $(cat "$W"/srv/*.pid 2>/dev/null); do kill "$p" 2>/dev/null || true; done
stop() { for s in base new; do [ -s "$W/srv/$s.pid" ] && kill "$(cat "$W/srv/$s.pid")" 2>/dev/null || true; done; }
trap stop EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
bench/apirows/serve.sh base "$base_bin" "$(free_port)" >/dev/null
bench/apirows/serve.sh new "$W/bin/convsvc" "$(free_port)" >/dev/null
echo "apirows: HEAD $(git rev-parse --short HEAD), base ${BASE:-the same tree}, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/apirows/rows.py "$N"
