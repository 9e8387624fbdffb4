#!/usr/bin/env bash
# Builds aomenc.wasm.gz: libaom's AV1 encoder from Debian's source package and aomenc.c,
# compiled by Debian 12's clang 14 for wasm32-wasi (Debian's wasi-libc) with WebAssembly SIMD
# (-msimd128, clang's auto-vectoriser: libaom's hand-written SIMD is x86 and Arm intrinsics,
# which do not target wasm) at -O3. `go build -tags aomsimd` then embeds it (avif_aom_embed.go).
#
#   AOM=3.12.1 convert/internal/wasmcodec/aomenc/build.sh [WORKDIR]
#
# AOM=3.12.1 (default): Debian 13's aom 3.12.1-1+deb13u1, its orig and debian tarballs checked
# against the hashes below and its CVE patches (0004-0006) applied; needs a deb-src line for
# trixie. AOM=3.6.0: Debian 12's aom 3.6.0-1+deb12u2 (the libaom of Debian 12's avifenc),
# checked by dpkg-source against its .dsc; needs a deb-src line for bookworm. WORKDIR (default: a
# temporary directory) holds the sources and the build; the output replaces ../aomenc.wasm.gz.
# The same packages give the same bytes (gzip -n; the .wasm has no debug sections).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
AOM=${AOM:-3.12.1}

pkgs=(clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32 cmake make dpkg-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
	apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Sources: Debian's (a deb-src line, e.g. /etc/apt/sources.list.d/debian-src.sources with
# "Types: deb-src", for the suite named above).
if [ ! -d "$work/aom" ]; then
	cd "$work"
	case $AOM in
	3.6.0)
		apt-get source --download-only "aom=3.6.0-1+deb12u2"
		dpkg-source -x "aom_3.6.0-1+deb12u2.dsc" aom
		;;
	3.12.1)
		# Debian's mirror here serves this version's tarballs but not always its .dsc, so
		# the tarballs are checked against their hashes here instead.
		apt-get source --download-only "aom=3.12.1-1+deb13u1" || true
		sha256sum -c <<-'EOF'
			40c929a41b2a59c24319a699c358351422829b3ae646de31b18cbabed0191962  aom_3.12.1.orig.tar.gz
			e94efe3356d69b0056dd95746f3cf29551130766b3f3503365e40e9d1c8f8ee7  aom_3.12.1-1+deb13u1.debian.tar.xz
		EOF
		mkdir aom
		tar -xzf aom_3.12.1.orig.tar.gz -C aom --strip-components=1
		tar -xJf aom_3.12.1-1+deb13u1.debian.tar.xz -C aom
		for p in aom/debian/patches/000[456]-*.patch; do
			patch -d aom -p1 -s <"$p"
		done
		;;
	*)
		echo "AOM must be 3.12.1 or 3.6.0" >&2
		exit 2
		;;
	esac
	cd - >/dev/null
fi

# Debian's wasi-libc has no <setjmp.h>: libaom's error exit becomes a trap (see shim/).
cflags="-O3 -DNDEBUG -msimd128 -isystem $here/shim"

mkdir -p "$work/build"
cat >"$work/wasm32-wasi.cmake" <<'EOF'
set(CMAKE_SYSTEM_NAME WASI)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(CMAKE_C_COMPILER clang-14)
set(CMAKE_CXX_COMPILER clang++-14)
set(CMAKE_AR /usr/lib/llvm-14/bin/llvm-ar)
set(CMAKE_RANLIB /usr/lib/llvm-14/bin/llvm-ranlib)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_CXX_COMPILER_TARGET wasm32-wasi)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
EOF
(
	cd "$work/build"
	cmake ../aom \
		-DCMAKE_TOOLCHAIN_FILE="$work/wasm32-wasi.cmake" \
		-DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_C_FLAGS_RELEASE="$cflags" \
		-DBUILD_SHARED_LIBS=0 \
		-DENABLE_DOCS=0 -DENABLE_EXAMPLES=0 -DENABLE_TESTDATA=0 -DENABLE_TESTS=0 -DENABLE_TOOLS=0 \
		-DAOM_TARGET_CPU=generic \
		-DCONFIG_RUNTIME_CPU_DETECT=0 \
		-DCONFIG_MULTITHREAD=0 \
		-DCONFIG_WEBM_IO=0 \
		-DCONFIG_AV1_DECODER=0 \
		-DCONFIG_AV1_ENCODER=1
	make -j"$(nproc)" aom
)

clang-14 --target=wasm32-wasi $cflags \
	-mexec-model=reactor \
	-Wl,--no-entry \
	-Wl,--export=malloc -Wl,--export=free -Wl,--export=encode \
	-Wl,--strip-all \
	-z stack-size=1048576 \
	-I "$work/aom" \
	-o "$work/aomenc.wasm" \
	"$here/aomenc.c" "$work/build/libaom.a"
gzip -9n <"$work/aomenc.wasm" >"$here/../aomenc.wasm.gz"
sha256sum "$here/../aomenc.wasm.gz"
