#!/bin/sh
# Writes the samples whose metadata, colour profile or animation the image converters cannot
# keep (issue 23), from the committed samples, with tools that share no code with convsvc's
# decoders: ffmpeg (APNG) and Python's standard library (metadata segments and chunks).
# Run from the module root:  sh testdata/images/make-metadata-samples.sh
set -eu
cd testdata/images
ffmpeg -v error -i sample-anim.gif -f apng -plays 0 -y sample-anim.apng.png
mv sample-anim.apng.png sample-anim-apng.png
python3 - <<'PY'
import struct, zlib

# A minimal EXIF block: a little-endian TIFF header and one IFD holding Make.
make = b"convsvc test camera\x00"
ifd = struct.pack("<H", 1) + struct.pack("<HHII", 0x010F, 2, len(make), 8 + 2 + 12 + 4) + struct.pack("<I", 0)
tiff = b"II*\x00" + struct.pack("<I", 8) + ifd + make
exif = b"Exif\x00\x00" + tiff

# A minimal ICC profile: a 128-byte header (size, 'acsp' signature, RGB, XYZ PCS) and no tags.
hdr = bytearray(128)
struct.pack_into(">I", hdr, 0, 132)
hdr[12:16], hdr[16:20], hdr[20:24], hdr[36:40] = b"mntr", b"RGB ", b"XYZ ", b"acsp"
struct.pack_into(">I", hdr, 8, 0x04300000)
icc = bytes(hdr) + struct.pack(">I", 0)

# JPEG: APP1 Exif and APP2 ICC_PROFILE right after SOI.
jpg = open("sample.jpeg", "rb").read()
assert jpg[:2] == b"\xff\xd8"
def seg(marker, payload):
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload
out = jpg[:2] + seg(0xE1, exif) + seg(0xE2, b"ICC_PROFILE\x00\x01\x01" + icc) + jpg[2:]
open("sample-exif-icc.jpeg", "wb").write(out)

# PNG: iCCP, eXIf and tEXt chunks after IHDR.
png = open("sample.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n"
def chunk(typ, data):
    return struct.pack(">I", len(data)) + typ + data + struct.pack(">I", zlib.crc32(typ + data) & 0xffffffff)
ihdr_end = 8 + 8 + 13 + 4
extra = chunk(b"iCCP", b"test profile\x00\x00" + zlib.compress(icc)) + chunk(b"eXIf", tiff) + chunk(b"tEXt", b"Comment\x00made for convsvc's tests")
open("sample-meta.png", "wb").write(png[:ihdr_end] + extra + png[ihdr_end:])
PY
