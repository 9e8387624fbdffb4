package pngenc

// filterRow filters cur (against prev, the row above, zero for the first row) into one of
// filt's rows with its filter-type byte first, and returns that row.
func filterRow(filt *[5][]byte, cur, prev []byte, bpp int, f Filter) []byte {
	switch f {
	case FilterNone:
		out := filt[0]
		out[0] = 0
		copy(out[1:], cur)
		return out
	case FilterSub:
		return filterSub(filt[1], cur, bpp)
	case FilterUp:
		return filterUp(filt[2], cur, prev)
	case FilterAverage:
		return filterAverage(filt[3], cur, prev, bpp)
	case FilterPaeth:
		return filterPaeth(filt[4], cur, prev, bpp)
	}
	return filterAdaptive(filt, cur, prev, bpp)
}

func filterSub(out, cur []byte, bpp int) []byte {
	out[0] = 1
	d := out[1 : len(cur)+1]
	copy(d[:bpp], cur[:bpp])
	for i := bpp; i < len(cur); i++ {
		d[i] = cur[i] - cur[i-bpp]
	}
	return out
}

func filterUp(out, cur, prev []byte) []byte {
	out[0] = 2
	d := out[1 : len(cur)+1]
	prev = prev[:len(cur)]
	for i := range cur {
		d[i] = cur[i] - prev[i]
	}
	return out
}

func filterAverage(out, cur, prev []byte, bpp int) []byte {
	out[0] = 3
	d := out[1 : len(cur)+1]
	prev = prev[:len(cur)]
	for i := 0; i < bpp; i++ {
		d[i] = cur[i] - prev[i]/2
	}
	for i := bpp; i < len(cur); i++ {
		d[i] = cur[i] - uint8((int(cur[i-bpp])+int(prev[i]))/2)
	}
	return out
}

func filterPaeth(out, cur, prev []byte, bpp int) []byte {
	out[0] = 4
	n := len(cur)
	d := out[1 : n+1]
	prev = prev[:n]
	for i := 0; i < bpp; i++ {
		d[i] = cur[i] - prev[i]
	}
	// Per channel, a (left), b (up) and c (up-left) slide along the row.
	for i := bpp; i < n; i++ {
		d[i] = cur[i] - paeth(cur[i-bpp], prev[i], prev[i-bpp])
	}
	return out
}

// paeth is the PNG Paeth predictor, as image/png computes it.
func paeth(a, b, c uint8) uint8 {
	pc := int(c)
	pa := int(b) - pc
	pb := int(a) - pc
	pc = abs(pa + pb)
	pa = abs(pa)
	pb = abs(pb)
	if pa <= pb && pa <= pc {
		return a
	} else if pb <= pc {
		return b
	}
	return c
}

func abs(x int) int {
	m := x >> (64 - 1)
	return (x ^ m) - m
}

// abs8 is the absolute value of a byte read as int8.
func abs8(d uint8) int {
	if d < 128 {
		return int(d)
	}
	return 256 - int(d)
}

func sad(row []byte) int {
	s := 0
	for _, v := range row[1:] {
		s += abs8(v)
	}
	return s
}

// filterAdaptive is image/png's choice: every filter, the smallest sum of absolute differences
// wins, ties going to the earlier of Up, Paeth, None, Sub, Average.
func filterAdaptive(filt *[5][]byte, cur, prev []byte, bpp int) []byte {
	best := filterUp(filt[2], cur, prev)
	bestSum := sad(best)
	try := func(row []byte) {
		if s := sad(row); s < bestSum {
			best, bestSum = row, s
		}
	}
	try(filterPaeth(filt[4], cur, prev, bpp))
	filt[0][0] = 0
	copy(filt[0][1:], cur)
	try(filt[0])
	try(filterSub(filt[1], cur, bpp))
	try(filterAverage(filt[3], cur, prev, bpp))
	return best
}
