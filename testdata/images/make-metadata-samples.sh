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

# A TIFF of two pages (8x6 RGB, uncompressed) and an icon of two sizes (PNG entries of 16x16
# and 32x32, sample.png scaled by ffmpeg), written with Python's standard library.
ffmpeg -v error -i sample.png -vf scale=16:16 -y icon16.tmp.png
ffmpeg -v error -i sample.png -vf scale=32:32 -y icon32.tmp.png
python3 - <<'PY'
import struct

def page(w, h, shade, offset, last):
    # IFD with 10 entries, then the pixel data; returns (ifd bytes, data bytes).
    pixels = bytes([(x * 30 + shade) % 256 for y in range(h) for x in range(w) for _ in range(3)])
    n = 10
    ifd_len = 2 + n * 12 + 4
    bps_off = offset + ifd_len
    data_off = bps_off + 6
    entries = [
        (256, 3, 1, w), (257, 3, 1, h), (258, 3, 3, bps_off), (259, 3, 1, 1), (262, 3, 1, 2),
        (273, 4, 1, data_off), (277, 3, 1, 3), (278, 3, 1, h), (279, 4, 1, len(pixels)), (284, 3, 1, 1),
    ]
    b = struct.pack("<H", n)
    for tag, typ, count, value in entries:
        if typ == 3 and count == 1:
            b += struct.pack("<HHIHH", tag, typ, count, value, 0)
        else:
            b += struct.pack("<HHII", tag, typ, count, value)
    next_off = 0 if last else data_off + len(pixels)
    b += struct.pack("<I", next_off)
    return b + struct.pack("<HHH", 8, 8, 8) + pixels

out = b"II*\x00" + struct.pack("<I", 8)
first = page(8, 6, 0, 8, False)
out += first
out += page(8, 6, 120, len(out), True)
open("sample-pages.tiff", "wb").write(out)

pngs = [open("icon16.tmp.png", "rb").read(), open("icon32.tmp.png", "rb").read()]
sizes = [16, 32]
ico = struct.pack("<HHH", 0, 1, len(pngs))
off = 6 + 16 * len(pngs)
for size, data in zip(sizes, pngs):
    ico += struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(data), off)
    off += len(data)
open("sample-sizes.ico", "wb").write(ico + b"".join(pngs))
PY
rm -f icon16.tmp.png icon32.tmp.png

# An image wider than an icon holds (300x20), sample.png scaled by ffmpeg.
ffmpeg -v error -i sample.png -vf scale=300:20 -y sample-wide.png
