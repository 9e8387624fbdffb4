package image

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// TestVerify_Geometry holds the image check to the size the options promise: the outputs of
// resized, cropped, rotated and oriented conversions pass, and an output of another size
// (the unresized conversion offered as the resized one's) fails output_invalid.
func TestVerify_Geometry(t *testing.T) {
	c := convert.NewEmptyCatalog(convert.Limits{})
	Register(c)
	cases := []struct {
		sample, from, to string
		opts             convert.Options
	}{
		{"sample.png", "png", "jpeg", convert.Options{Width: 37}},
		{"sample.png", "png", "webp", convert.Options{Width: 40, Height: 40, Fit: convert.FitCover}},
		{"sample.jpeg", "jpeg", "png", convert.Options{Height: 21, Rotate: 90}},
		{"sample.png", "png", "png", convert.Options{Crop: &convert.Crop{Left: 3, Top: 4, Width: 20, Height: 10}, Rotate: 270}},
		{"sample-exif-icc.jpeg", "jpeg", "tiff", convert.Options{}},
		{"sample-sizes.ico", "ico", "gif", convert.Options{Width: 16, Height: 30, Fit: convert.FitFill}},
	}
	for _, tc := range cases {
		t.Run(tc.sample+"->"+tc.to, func(t *testing.T) {
			inPath := filepath.Join(convtest.Testdata, "images", tc.sample)
			in := convtest.OpenFile(t, inPath)
			var out bytes.Buffer
			if _, err := c.Convert(context.Background(), tc.from, tc.to, tc.opts, in, &out, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			outPath := filepath.Join(t.TempDir(), "out")
			if err := os.WriteFile(outPath, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			convtest.CheckVerifier(t, c, tc.from, tc.to, tc.opts, inPath, outPath)

			// The output of the same input without the options has another size.
			var plain bytes.Buffer
			if _, err := c.Convert(context.Background(), tc.from, tc.to, convert.Options{AutoOrient: tc.opts.AutoOrient}, in, &plain, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(plain.Bytes(), out.Bytes()) {
				return // the options changed nothing of the size (the oriented sample)
			}
			ok, err := c.Verify(context.Background(), tc.from, tc.to, tc.opts, in, bytes.NewReader(plain.Bytes()), int64(plain.Len()))
			if ok || convert.ErrorReason(err) != convert.ReasonOutputInvalid {
				t.Fatalf("an output of the wrong size passes: %v %v", ok, err)
			}
		})
	}
}
