package jpegstrip

import (
	"bytes"
	"fmt"
)

// JPEG markers (the byte after 0xff).
const (
	markerSOF0 = 0xc0
	markerDHT  = 0xc4
	markerRST0 = 0xd0
	markerSOI  = 0xd8
	markerEOI  = 0xd9
	markerSOS  = 0xda
	markerDQT  = 0xdb
	markerDRI  = 0xdd
)

// layout is one strip's JPEG as image/jpeg writes it, cut where the splice needs it.
type layout struct {
	tables   []byte // SOI and every segment before SOS (DQT, SOF0, DHT)
	heightAt int    // offset in tables of SOF0's 16-bit height
	sos      []byte // the SOS segment
	data     []byte // the entropy-coded data, between SOS and EOI
}

// parse splits a JPEG written by image/jpeg for a w x h image with comps components, and
// checks everything the splice relies on: only DQT, SOF0 and DHT segments before a single
// SOS, no restart interval, 8-bit samples, 4:2:0 sampling for three components (1x1 for
// one), a sequential scan over every component, and entropy data that holds no marker and
// is followed by EOI at the very end. Anything else is ErrLayout.
func parse(b []byte, w, h, comps int) (layout, error) {
	var l layout
	if len(b) < 4 || b[0] != 0xff || b[1] != markerSOI {
		return l, fmt.Errorf("%w: no SOI at the start", ErrLayout)
	}
	seen := map[byte]int{}
	pos := 2
	for {
		if pos+4 > len(b) || b[pos] != 0xff {
			return l, fmt.Errorf("%w: no marker at offset %d", ErrLayout, pos)
		}
		marker := b[pos+1]
		n := int(b[pos+2])<<8 | int(b[pos+3])
		if n < 2 || pos+2+n > len(b) {
			return l, fmt.Errorf("%w: segment %#x at offset %d has length %d past the end", ErrLayout, marker, pos, n)
		}
		seg := b[pos+4 : pos+2+n]
		seen[marker]++
		switch marker {
		case markerDQT, markerDHT:
		case markerSOF0:
			if seen[marker] > 1 {
				return l, fmt.Errorf("%w: two SOF0 segments", ErrLayout)
			}
			if err := checkSOF(seg, w, h, comps); err != nil {
				return l, err
			}
			l.heightAt = pos + 5
		case markerSOS:
			if seen[markerSOF0] != 1 || seen[markerDQT] == 0 || seen[markerDHT] == 0 {
				return l, fmt.Errorf("%w: SOS before DQT, SOF0 and DHT", ErrLayout)
			}
			if err := checkSOS(seg, comps); err != nil {
				return l, err
			}
			l.tables = b[:pos]
			l.sos = b[pos : pos+2+n]
			data := b[pos+2+n:]
			if len(data) < 2 || data[len(data)-2] != 0xff || data[len(data)-1] != markerEOI {
				return l, fmt.Errorf("%w: no EOI at the end", ErrLayout)
			}
			data = data[:len(data)-2]
			if err := checkEntropy(data); err != nil {
				return l, err
			}
			l.data = data
			return l, nil
		default:
			return l, fmt.Errorf("%w: unexpected segment %#x before SOS", ErrLayout, marker)
		}
		pos += 2 + n
	}
}

// checkSOF checks a SOF0 segment's payload: 8-bit precision, the strip's size, and
// image/jpeg's component ids and sampling factors.
func checkSOF(seg []byte, w, h, comps int) error {
	if len(seg) != 6+3*comps {
		return fmt.Errorf("%w: SOF0 of %d bytes for %d components", ErrLayout, len(seg), comps)
	}
	if seg[0] != 8 {
		return fmt.Errorf("%w: %d-bit samples", ErrLayout, seg[0])
	}
	gotH, gotW := int(seg[1])<<8|int(seg[2]), int(seg[3])<<8|int(seg[4])
	if gotW != w || gotH != h || int(seg[5]) != comps {
		return fmt.Errorf("%w: SOF0 says %dx%d with %d components, want %dx%d with %d", ErrLayout, gotW, gotH, seg[5], w, h, comps)
	}
	want := []byte{1, 0x11, 0}
	if comps == 3 {
		want = []byte{1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1}
	}
	if !bytes.Equal(seg[6:], want) {
		return fmt.Errorf("%w: SOF0 components % x, want % x", ErrLayout, seg[6:], want)
	}
	return nil
}

// checkSOS checks an SOS segment's payload: one interleaved sequential scan of every component.
func checkSOS(seg []byte, comps int) error {
	if len(seg) != 4+2*comps || int(seg[0]) != comps {
		return fmt.Errorf("%w: SOS is not one scan of %d components", ErrLayout, comps)
	}
	if tail := seg[len(seg)-3:]; tail[0] != 0 || tail[1] != 63 || tail[2] != 0 {
		return fmt.Errorf("%w: SOS spectral selection % x is not sequential", ErrLayout, tail)
	}
	return nil
}

// checkEntropy checks that entropy-coded data holds no marker: every 0xff is a stuffed
// 0xff 0x00.
func checkEntropy(data []byte) error {
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], 0xff)
		if j < 0 {
			return nil
		}
		i += j
		if i+1 >= len(data) || data[i+1] != 0 {
			return fmt.Errorf("%w: marker inside the entropy-coded data at offset %d", ErrLayout, i)
		}
		i += 2
	}
}

// sameTables reports whether a later strip's tables and scan header match the first strip's
// apart from the height, which is what makes one set of tables valid for every strip.
func sameTables(first, l layout) error {
	if len(l.tables) != len(first.tables) || l.heightAt != first.heightAt || !bytes.Equal(l.sos, first.sos) ||
		!bytes.Equal(l.tables[:l.heightAt], first.tables[:first.heightAt]) ||
		!bytes.Equal(l.tables[l.heightAt+2:], first.tables[first.heightAt+2:]) {
		return fmt.Errorf("%w: strips were written with different tables", ErrLayout)
	}
	return nil
}
