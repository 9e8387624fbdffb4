package tiffenc

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// FuzzEncode checks that every small image of every supported type, with the options the
// data picks, reads back through x/image/tiff to the same pixels.
func FuzzEncode(f *testing.F) {
	f.Add([]byte{0, 3, 3, 0, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 5 {
			return
		}
		kind, w, h, opt, alpha := data[0]%3, int(data[1]%40)+1, int(data[2]%70)+1, data[3], data[4]
		px := data[5:]
		if len(px) == 0 {
			px = []byte{0}
		}
		o := &Options{RowsPerStrip: int(opt % 9), NoPredictor: opt&0x10 != 0, Stdlib: opt&0x20 != 0}
		if opt&0x40 != 0 {
			o.Level = 1 + int(alpha%9)
		}
		m := testimg.FromBytes(kind, w, h, px, alpha&0x80 != 0)
		var buf bytes.Buffer
		if err := Encode(context.Background(), &buf, m, o); err != nil {
			t.Fatal(err)
		}
		if got := decode(t, buf.Bytes()); !reflect.DeepEqual(got, wantDecoded(m)) {
			t.Fatalf("%+v: decoded %T differs from the source", o, got)
		}
	})
}
