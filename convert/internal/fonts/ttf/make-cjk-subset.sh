#!/bin/sh
# Makes cjk.ttf and hangul.ttf. cjk.ttf is, the CJK font convsvc embeds: Droid Sans Fallback (Apache License 2.0, from
# Debian's fonts-droid-fallback 1:6.0.1r16-1.1) subset to CJK punctuation, kana, Hangul
# (jamo, compatibility jamo, all 11,172 syllables), the CJK Unified Ideographs block and the
# half/full-width forms, without hinting or layout tables.
#   apt-get install fonts-droid-fallback fonttools && sh make-cjk-subset.sh
# Same inputs give the same bytes (pyftsubset is deterministic).
set -eu
src=${1:-/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf}
cd "$(dirname "$0")"
pyftsubset "$src" \
	--unicodes="U+3000-303F,U+3040-30FF,U+31F0-31FF,U+3130-318F,U+1100-11FF,U+AC00-D7A3,U+4E00-9FFF,U+FF00-FFEF" \
	--no-hinting --drop-tables+=GSUB,GPOS,GDEF --output-file=cjk.ttf
# hangul.ttf: Droid Sans Fallback has no Hangul syllables, so Korean comes from Nanum Gothic
# (SIL Open Font License 1.1, Debian's fonts-nanum 20200506-1) subset to Hangul jamo,
# compatibility jamo and the 11,172 syllables.
#   apt-get install fonts-nanum
hsrc=${2:-/usr/share/fonts/truetype/nanum/NanumGothic.ttf}
pyftsubset "$hsrc" \
	--unicodes="U+1100-11FF,U+3130-318F,U+AC00-D7A3" \
	--no-hinting --drop-tables+=GSUB,GPOS,GDEF --output-file=hangul.ttf
