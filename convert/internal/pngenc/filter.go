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
	case FilterMinSAD:
		return filterMinSAD(filt, cur, prev, bpp)
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

// paeth is the PNG Paeth predictor. The choice is written as two conditional moves instead of
// image/png's if-else chain: on noisy photos its branches mispredict (measured in TestMeasure).
func paeth(a, b, c uint8) uint8 {
	pc := int(c)
	pa := int(b) - pc
	pb := int(a) - pc
	pc = abs(pa + pb)
	pa = abs(pa)
	pb = abs(pb)
	x, px := a, pa
	if pb < px {
		x, px = b, pb
	}
	if pc < px {
		x = c
	}
	return x
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

// filterAdaptive is image/png's choice, written the same way (early exits included): every
// filter, the smallest sum of absolute differences wins, ties going to the earlier of Up, Paeth,
// None, Sub, Average.
func filterAdaptive(filt *[5][]byte, cur, prev []byte, bpp int) []byte {
	n := len(cur)
	prev = prev[:n]
	cdat0 := cur
	cdat1 := filt[1][1 : n+1]
	cdat2 := filt[2][1 : n+1]
	cdat3 := filt[3][1 : n+1]
	cdat4 := filt[4][1 : n+1]
	pdat := prev

	sum := 0
	for i := 0; i < n; i++ {
		cdat2[i] = cdat0[i] - pdat[i]
		sum += abs8(cdat2[i])
	}
	best := sum
	f := 2

	sum = 0
	for i := 0; i < bpp; i++ {
		cdat4[i] = cdat0[i] - pdat[i]
		sum += abs8(cdat4[i])
	}
	for i := bpp; i < n; i++ {
		cdat4[i] = cdat0[i] - paeth(cdat0[i-bpp], pdat[i], pdat[i-bpp])
		sum += abs8(cdat4[i])
		if sum >= best {
			break
		}
	}
	if sum < best {
		best, f = sum, 4
	}

	sum = 0
	for i := 0; i < n; i++ {
		sum += abs8(cdat0[i])
		if sum >= best {
			break
		}
	}
	if sum < best {
		best, f = sum, 0
	}

	sum = 0
	for i := 0; i < bpp; i++ {
		cdat1[i] = cdat0[i]
		sum += abs8(cdat1[i])
	}
	for i := bpp; i < n; i++ {
		cdat1[i] = cdat0[i] - cdat0[i-bpp]
		sum += abs8(cdat1[i])
		if sum >= best {
			break
		}
	}
	if sum < best {
		best, f = sum, 1
	}

	sum = 0
	for i := 0; i < bpp; i++ {
		cdat3[i] = cdat0[i] - pdat[i]/2
		sum += abs8(cdat3[i])
	}
	for i := bpp; i < n; i++ {
		cdat3[i] = cdat0[i] - uint8((int(cdat0[i-bpp])+int(pdat[i]))/2)
		sum += abs8(cdat3[i])
		if sum >= best {
			break
		}
	}
	if sum < best {
		f = 3
	}
	if f == 0 {
		copy(filt[0][1:], cur)
	}
	filt[f][0] = byte(f)
	return filt[f]
}

// filterMinSAD picks, per row, the one of None, Sub and Up with the smallest sum of absolute
// differences, computed in one pass; the chosen filter is then applied.
func filterMinSAD(filt *[5][]byte, cur, prev []byte, bpp int) []byte {
	n := len(cur)
	prev = prev[:n]
	var sn, ss, su int
	for i := 0; i < bpp; i++ {
		v := abs8(cur[i])
		sn += v
		ss += v
		su += abs8(cur[i] - prev[i])
	}
	for i := bpp; i < n; i++ {
		c := cur[i]
		sn += abs8(c)
		ss += abs8(c - cur[i-bpp])
		su += abs8(c - prev[i])
	}
	switch {
	case su <= ss && su <= sn:
		return filterUp(filt[2], cur, prev)
	case ss <= sn:
		return filterSub(filt[1], cur, bpp)
	}
	out := filt[0]
	out[0] = 0
	copy(out[1:], cur)
	return out
}
