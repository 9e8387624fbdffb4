package flaccrc

import "testing"

// TestCRC16 checks the sliced CRC-16 against the byte-at-a-time definition at every length
// around the 8-byte step.
func TestCRC16(t *testing.T) {
	p := make([]byte, 40)
	for i := range p {
		p[i] = byte(i*37 + 11)
	}
	for n := range len(p) + 1 {
		var want uint16
		for _, b := range p[:n] {
			want ^= uint16(b) << 8
			for range 8 {
				if want&0x8000 != 0 {
					want = want<<1 ^ 0x8005
				} else {
					want <<= 1
				}
			}
		}
		if got := CRC16(p[:n]); got != want {
			t.Fatalf("CRC16 of %d bytes = %#04x, want %#04x", n, got, want)
		}
	}
}
