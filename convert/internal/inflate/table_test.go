package inflate

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// refTable is the table builder before the sorted, doubling one (build and pairLiterals as
// they were), kept to check the new tables decode every bit string the same way.
// It decodes one canonical Huffman code: a first level indexed by the next bits of the
// stream, with links to second-level tables for longer codes.
type refTable struct {
	bits    uint
	entries []uint32
	long    []int        // first-level indexes that link to a second level (scratch)
	lits    []refLitCode // literal codes by length, for pairLiterals (scratch)
}

// refLitCode is a literal's code, bit-reversed as it is read.
type refLitCode struct {
	rev uint16
	len uint8
	sym uint8
}

// build makes the table for code lengths (one per symbol, 0 for unused). It accepts what
// compress/flate accepts: a complete code, a single code of length 1, or no code at all
// (an error only if a symbol is decoded with it); anything else returns false.
func (t *refTable) build(lengths []uint8, info []uint32, primary uint) bool {
	var count [16]int
	maxLen := 0
	for _, l := range lengths {
		if l != 0 {
			count[l]++
			maxLen = max(maxLen, int(l))
		}
	}
	t.bits = primary
	size := 1 << primary
	t.entries = slices.Grow(t.entries[:0], size)[:size]
	var next [16]int
	code := 0
	for l := 1; l <= maxLen; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	if maxLen > 0 && next[maxLen]+count[maxLen] != 1<<maxLen {
		if maxLen != 1 || count[1] != 1 {
			return false
		}
	}
	if maxLen <= 1 {
		// Empty or degenerate: what the code does not have is invalid with length 0, and
		// decoding it fails at once, as with compress/flate. (A complete code fills every
		// entry below.)
		for i := range t.entries {
			t.entries[i] = kindInvalid
		}
	}
	// Second-level tables: for every first-level index that begins a longer code, as many
	// index bits as the longest code beginning there needs (kept in the link entry until
	// the tables are laid out).
	if maxLen > int(primary) {
		t.long = t.long[:0]
		c := next
		for _, l := range lengths {
			if int(l) <= int(primary) {
				continue
			}
			p := reverse(c[l], int(l)) & (size - 1)
			c[l]++
			sub := uint32(l) - uint32(primary)
			if e := t.entries[p]; e&kindMask == kindLink && e>>16 == 0xffff {
				t.entries[p] = kindLink | max(e>>8&15, sub)<<8 | 0xffff<<16
				continue
			}
			t.entries[p] = kindLink | sub<<8 | 0xffff<<16
			t.long = append(t.long, p)
		}
		for _, p := range t.long {
			sub := t.entries[p] >> 8 & 15
			off := len(t.entries)
			t.entries = slices.Grow(t.entries, 1<<sub)[:off+1<<sub]
			t.entries[p] = kindLink | sub<<8 | uint32(off)<<16 | uint32(primary)
		}
	}
	for s, l := range lengths {
		if l == 0 {
			continue
		}
		r := reverse(next[l], int(l))
		next[l]++
		e := info[s] | uint32(l)
		if int(l) <= int(primary) {
			for i := r; i < size; i += 1 << l {
				t.entries[i] = e
			}
			continue
		}
		link := t.entries[r&(size-1)]
		off, sub := int(link>>16), int(link>>8&15)
		for i := r >> primary; i < 1<<sub; i += 1 << (int(l) - int(primary)) {
			t.entries[off+i] = e
		}
	}
	return true
}

// pairLiterals makes every first-level index whose bits hold the whole codes of two
// literals an entry of both. lengths are the literal/length code lengths build was given.
func (t *refTable) pairLiterals(lengths []uint8) {
	// The literals' codes, shortest first (counting sort by length); the canonical codes
	// count every symbol's length.
	var all, count, next, at [16]int
	for s, l := range lengths {
		all[l]++
		if s < 256 {
			count[l]++
		}
	}
	all[0] = 0
	code, n := 0, 0
	for l := 1; l < 16; l++ {
		code = (code + all[l-1]) << 1
		next[l] = code
		at[l] = n
		n += count[l]
	}
	t.lits = slices.Grow(t.lits[:0], n)[:n]
	for s, l := range lengths {
		if l == 0 {
			continue
		}
		r := reverse(next[l], int(l))
		next[l]++
		if s < 256 {
			t.lits[at[l]] = refLitCode{rev: uint16(r), len: l, sym: uint8(s)}
			at[l]++
		}
	}
	// upTo[k]: how many literals have codes of at most k bits.
	var upTo [16]int
	for l := 1; l < 16; l++ {
		upTo[l] = upTo[l-1] + count[l]
	}
	bits := int(t.bits)
	for _, a := range t.lits {
		rest := bits - int(a.len)
		if rest <= 0 {
			break
		}
		for _, b := range t.lits[:upTo[rest]] {
			l := int(a.len) + int(b.len)
			e := kindLiteral | 2<<8 | uint32(l) | uint32(a.sym)<<16 | uint32(b.sym)<<24
			for i := int(a.rev) | int(b.rev)<<a.len; i < 1<<bits; i += 1 << l {
				t.entries[i] = e
			}
		}
	}
}

// lookup resolves the entry for the next 15 bits x of the stream, following a link.
func lookup(entries []uint32, primary uint, x int) uint32 {
	e := entries[x&(1<<primary-1)]
	if e&kindMask == kindLink {
		e = entries[int(e>>16)+x>>primary&(1<<(e>>8&15)-1)]
	}
	return e
}

// randomLengths returns code lengths for n symbols: a complete code of at most 15 bits
// (leaves split at random), or with bad, any lengths at all (mostly not a code).
func randomLengths(rng *rand.Rand, n int, bad bool) []uint8 {
	l := make([]uint8, n)
	if bad {
		for i := range l {
			l[i] = uint8(rng.IntN(16))
		}
		return l
	}
	leaves := []uint8{1, 1}
	want := 2 + rng.IntN(n-1)
	for len(leaves) < want {
		i := rng.IntN(len(leaves))
		if leaves[i] == 15 {
			if rng.IntN(8) == 0 {
				break
			}
			continue
		}
		leaves[i]++
		leaves = append(leaves, leaves[i])
	}
	for i, s := range rng.Perm(n)[:len(leaves)] {
		l[s] = leaves[i]
	}
	return l
}

// checkTable builds lengths with the old and the new builder and compares what every bit
// string decodes to.
func checkTable(t *testing.T, lengths []uint8, info []uint32, primary uint, pairs bool) {
	t.Helper()
	var ref refTable
	var got table
	okRef := ref.build(lengths, info, primary)
	if okRef && pairs {
		ref.pairLiterals(lengths)
	}
	if ok := got.build(lengths, info, primary, pairs); ok != okRef {
		t.Fatalf("lengths %v: build %v, old build %v", lengths, ok, okRef)
	}
	if !okRef {
		return
	}
	for x := range 1 << 15 {
		if g, w := lookup(got.entries, primary, x), lookup(ref.entries, ref.bits, x); g != w {
			t.Fatalf("lengths %v, bits %015b: entry %08x, old builder %08x", lengths, x, g, w)
		}
	}
}

// TestTable_SameAsOldBuilder: the sorted, doubling builder decodes every bit string as the
// symbol-order builder and pairLiterals did, for random complete codes of every size, random
// non-codes, the degenerate codes, the fixed code and photoIDAT's dynamic codes.
func TestTable_SameAsOldBuilder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		bad := i%10 == 9
		checkTable(t, randomLengths(rng, 2+rng.IntN(287), bad), litInfo[:], litBits, true)
		checkTable(t, randomLengths(rng, 2+rng.IntN(30), bad), distInfo[:], distBits, false)
		checkTable(t, randomLengths(rng, 2+rng.IntN(18), bad), clenInfo[:], clenBits, false)
	}
	for _, l := range [][]uint8{{}, {0, 0, 0}, {1}, {0, 1, 0}, {1, 1}, {2, 2, 2, 2}, {1, 0, 2}} {
		checkTable(t, l, litInfo[:], litBits, true)
		checkTable(t, l, distInfo[:], distBits, false)
	}
	var fixed [320]uint8
	for i := range fixed {
		switch {
		case i < 144, i >= 280 && i < 288:
			fixed[i] = 8
		case i < 256:
			fixed[i] = 9
		case i < 280:
			fixed[i] = 7
		default:
			fixed[i] = 5
		}
	}
	checkTable(t, fixed[:288], litInfo[:], litBits, true)
	checkTable(t, fixed[288:], distInfo[:], distBits, false)
	if testing.Short() {
		return
	}
	d := &Reader{}
	for _, s := range dynamicHeaders(t) {
		// The block header's 3 bits, then HLIT and HDIST.
		peek, n, p := s.bb, s.nb, s.pos
		for ; n < 17 && p < s.end; n, p = n+8, p+1 {
			peek |= uint64(s.in[p]) << n
		}
		nlit, ndist := int(peek>>3&31)+257, int(peek>>8&31)+1
		d.in, d.pos, d.end, d.bb, d.nb = s.in, s.pos, s.end, s.bb, s.nb
		if err := d.blockHeader(); err != nil {
			t.Fatal(err)
		}
		checkTable(t, slices.Clone(d.lengths[:nlit]), litInfo[:], litBits, true)
		checkTable(t, slices.Clone(d.lengths[nlit:nlit+ndist]), distInfo[:], distBits, false)
	}
}
