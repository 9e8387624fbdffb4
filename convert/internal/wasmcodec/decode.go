package wasmcodec

// The AVIF and JPEG XL modules export the same decode function (gen2brain's ABI):
//
//	decode(in, in_size, config_only, decode_all, &width, &height, &depth, &count, delay, out)
//
// called first for the header only, then again for the pixels. decodeHeader and
// decodePixels are those two calls, shared by DecodeAVIF and DecodeJXL; fail is the
// format's sentinel error for a file the library rejects.

// decodeHeader copies data into the instance and asks decode for the header: it returns where
// data and the four header words (width, height, depth, frame count) are, and the words.
func (in *instance) decodeHeader(data []byte, fail error) (src, info uint32, dims [4]uint32, err error) {
	if src, err = in.malloc(len(data)); err != nil {
		return 0, 0, dims, err
	}
	if err = in.write(src, data); err != nil {
		return 0, 0, dims, err
	}
	if info, err = in.malloc(4 * 4); err != nil {
		return 0, 0, dims, err
	}
	ok, err := in.call("decode", uint64(src), uint64(len(data)), 1, 0, uint64(info), uint64(info+4), uint64(info+8), uint64(info+12), 0, 0)
	if err != nil {
		return 0, 0, dims, err
	}
	if ok == 0 {
		return 0, 0, dims, fail
	}
	for i := range dims {
		if dims[i], err = in.u32(info + 4*uint32(i)); err != nil {
			return 0, 0, dims, err
		}
	}
	return src, info, dims, nil
}

// decodePixels asks decode for the first frame's pixels, size bytes, with delayBytes of room
// for the frame durations it writes, and returns a view of them in the instance's memory
// (valid until it is closed).
func (in *instance) decodePixels(src uint32, srcLen int, info uint32, size, delayBytes int, fail error) ([]byte, error) {
	out, err := in.malloc(size)
	if err != nil {
		return nil, err
	}
	delay, err := in.malloc(delayBytes)
	if err != nil {
		return nil, err
	}
	ok, err := in.call("decode", uint64(src), uint64(srcLen), 0, 0, uint64(info), uint64(info+4), uint64(info+8), uint64(info+12), uint64(delay), uint64(out))
	if err != nil {
		return nil, err
	}
	if ok == 0 {
		return nil, fail
	}
	return in.read(out, size)
}
