package convert

import (
	"bytes"
	"encoding/binary"
)

// sniffImage recognises the image formats whose signature is more than a fixed prefix: ISOBMFF
// images told apart by their ftyp brands (AVIF, HEIC), Netpbm files (a "P1".."P7" magic is two
// printable characters, so the header after it must look right too) and ICO files (a
// four-byte magic common in binary data, so the directory must be plausible). It returns
// name "" when data is none of them.
func sniffImage(data []byte) (id, name string) {
	if id, name := sniffFtyp(data); name != "" {
		return id, name
	}
	if sniffNetpbm(data) {
		return "ppm", "Netpbm"
	}
	if len(data) >= 6+16 && string(data[:4]) == "\x00\x00\x01\x00" {
		count := binary.LittleEndian.Uint16(data[4:])
		// First directory entry: width, height, colours, reserved (0), planes (0 or 1).
		if count > 0 && data[6+3] == 0 && binary.LittleEndian.Uint16(data[6+4:]) <= 1 {
			return "ico", "ICO"
		}
	}
	return "", ""
}

// Brands of the ISOBMFF ftyp box, by the format they announce.
var (
	avifBrands = []string{"avif", "avis"}
	heicBrands = []string{"heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs"}
	heifBrands = []string{"mif1", "msf1", "mif2", "miaf"}
)

// sniffFtyp names an ISOBMFF file by its major and compatible brands: AVIF first (an AVIF
// file often lists mif1 and miaf too), then HEIC, then a generic HEIF image. Other ftyp files
// (MP4, QuickTime) are left to the magics table.
func sniffFtyp(data []byte) (id, name string) {
	if len(data) < 16 || string(data[4:8]) != "ftyp" {
		return "", ""
	}
	size := int(binary.BigEndian.Uint32(data))
	if size < 16 || size > len(data) {
		size = len(data)
	}
	size -= size % 4
	var brands [][]byte
	brands = append(brands, data[8:12]) // major brand; data[12:16] is the minor version
	for off := 16; off+4 <= size; off += 4 {
		brands = append(brands, data[off:off+4])
	}
	has := func(list []string) bool {
		for _, b := range brands {
			for _, l := range list {
				if bytes.Equal(b, []byte(l)) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has(avifBrands):
		return "avif", "AVIF"
	case has(heicBrands):
		return "heic", "HEIC"
	case has(heifBrands):
		return "", "HEIF"
	}
	return "", ""
}

// sniffNetpbm reports whether data starts like a Netpbm header: "P1".."P6" then whitespace,
// optional comments and a digit (the width), or "P7" then a newline and a PAM header line.
func sniffNetpbm(data []byte) bool {
	if len(data) < 4 || data[0] != 'P' || data[1] < '1' || data[1] > '7' {
		return false
	}
	if data[1] == '7' {
		if data[2] != '\n' && data[2] != '\r' {
			return false
		}
		rest := bytes.TrimLeft(data[3:], " \t\r\n")
		for _, kw := range []string{"WIDTH", "HEIGHT", "DEPTH", "MAXVAL", "TUPLTYPE", "ENDHDR", "#"} {
			if bytes.HasPrefix(rest, []byte(kw)) {
				return true
			}
		}
		return false
	}
	if !isPNMSpace(data[2]) {
		return false
	}
	for i := 2; i < len(data); {
		switch c := data[i]; {
		case isPNMSpace(c):
			i++
		case c == '#':
			end := bytes.IndexAny(data[i:], "\r\n")
			if end < 0 {
				return false
			}
			i += end
		default:
			return c >= '0' && c <= '9'
		}
	}
	return false
}

func isPNMSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
