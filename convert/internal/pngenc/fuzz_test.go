package pngenc

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// fuzzImage builds a small image from data: kind, size, options, then pixels (repeated).
func fuzzImage(data []byte) (image.Image, *Options) {
	if len(data) < 5 {
		return nil, nil
	}
	kind, w, h, opt, alpha := data[0]%3, int(data[1]%40)+1, int(data[2]%40)+1, data[3], data[4]
	px := data[5:]
	if len(px) == 0 {
		px = []byte{0}
	}
	o := &Options{
		Filter:     Filter(opt % 8),
		Compressor: Compressor(opt / 8 % 3),
		BandRows:   int(opt / 24 % 5),
		Level:      1 + int(alpha%9),
	}
	m := testimg.FromBytes(kind, w, h, px, alpha&0x80 != 0)
	return m, o
}

// FuzzEncode checks that every small image of every supported type, with every option,
// decodes through image/png to what image/png's own encoder stores.
func FuzzEncode(f *testing.F) {
	f.Add([]byte{0, 3, 3, 0, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, o := fuzzImage(data)
		if m == nil {
			return
		}
		var ours, theirs bytes.Buffer
		if err := Encode(context.Background(), &ours, m, o); err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(&theirs, m); err != nil {
			t.Fatal(err)
		}
		got, err := png.Decode(&ours)
		if err != nil {
			t.Fatalf("%+v: image/png cannot decode the output: %v", o, err)
		}
		want, err := png.Decode(&theirs)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: decoded %T differs from image/png's", o, got)
		}
	})
}
