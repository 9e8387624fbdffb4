package image

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

func TestOptions_Validate(t *testing.T) {
	cat := testCatalog(convert.Limits{})
	jpegF, _ := cat.Format("jpeg")
	pngF, _ := cat.Format("png")
	yes := true
	tests := []struct {
		name   string
		target convert.Format
		opts   convert.Options
		option string // "" means valid
	}{
		{"none", pngF, convert.Options{}, ""},
		{"quality for jpeg", jpegF, convert.Options{Quality: 90}, ""},
		{"quality for png", pngF, convert.Options{Quality: 90}, convert.OptQuality},
		{"quality 0 is unset", jpegF, convert.Options{Quality: 0}, ""},
		{"quality 101", jpegF, convert.Options{Quality: 101}, convert.OptQuality},
		{"quality -1", jpegF, convert.Options{Quality: -1}, convert.OptQuality},
		{"width only", pngF, convert.Options{Width: 100}, ""},
		{"negative width", pngF, convert.Options{Width: -1}, convert.OptWidth},
		{"huge height", pngF, convert.Options{Height: convert.MaxDimension + 1}, convert.OptHeight},
		{"fit without box", pngF, convert.Options{Width: 10, Fit: convert.FitCover}, convert.OptFit},
		{"unknown fit", pngF, convert.Options{Width: 10, Height: 10, Fit: "stretch"}, convert.OptFit},
		{"cover", pngF, convert.Options{Width: 10, Height: 10, Fit: convert.FitCover}, ""},
		{"page for png (pdf input)", pngF, convert.Options{Page: 2}, ""},
		{"lossless for jpeg", jpegF, convert.Options{Lossless: &yes}, convert.OptLossless},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate(tt.target)
			var oe *convert.OptionError
			switch {
			case tt.option == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.option != "" && (!errors.As(err, &oe) || oe.Option != tt.option):
				t.Fatalf("got %v, want an error naming %s", err, tt.option)
			}
		})
	}
}

func TestResize_Modes(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 400, 200))
	tests := []struct {
		opts       convert.Options
		wantW, wer int
	}{
		{convert.Options{Width: 100}, 100, 50},
		{convert.Options{Height: 50}, 100, 50},
		{convert.Options{Width: 100, Height: 100}, 100, 50},                         // contain
		{convert.Options{Width: 100, Height: 100, Fit: convert.FitCover}, 100, 100}, // cover crops
		{convert.Options{Width: 100, Height: 100, Fit: convert.FitFill}, 100, 100},
		{convert.Options{Width: 800}, 800, 400},
	}
	for _, tt := range tests {
		got, err := Resize(context.Background(), src, tt.opts, convert.Limits{MaxPixels: 1e6})
		if err != nil {
			t.Fatal(err)
		}
		if b := got.Bounds(); b.Dx() != tt.wantW || b.Dy() != tt.wer {
			t.Errorf("%+v: got %dx%d, want %dx%d", tt.opts, b.Dx(), b.Dy(), tt.wantW, tt.wer)
		}
	}
	if _, err := Resize(context.Background(), src, convert.Options{Width: 20000, Height: 20000, Fit: convert.FitFill}, convert.Limits{MaxPixels: 1e6}); err == nil {
		t.Fatal("a resize over the pixel limit must fail before allocating")
	}
}

func TestConvert_OptionsReachTheEncoder(t *testing.T) {
	c := testCatalog(convert.Limits{})
	size := func(q int) int {
		var out bytes.Buffer
		_, err := c.Convert(context.Background(), "png", "jpeg", convert.Options{Quality: q, Width: 32}, openFile(t, "../../testdata/images/sample.png"), &out, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(out.Bytes()))
		if err != nil || img.Bounds().Dx() != 32 || img.Bounds().Dy() != 24 {
			t.Fatalf("decoded %v %v", img.Bounds(), err)
		}
		return out.Len()
	}
	if low, high := size(10), size(95); low >= high {
		t.Fatalf("quality 10 gave %d bytes, quality 95 %d", low, high)
	}
}

func TestCheckPixels(t *testing.T) {
	lim := convert.Limits{MaxPixels: convert.DefaultMaxPixels}
	tests := []struct {
		w, h int
		want string // "" means accepted
	}{
		{1, 1, ""},
		{10000, 10000, ""},
		{10000, 10001, "image is 10000x10001 = 100.01 megapixels, over the 100 megapixel limit"},
		{0, 10, "image has invalid dimensions 0x10"},
		{10, -1, "image has invalid dimensions 10x-1"},
		{1 << 40, 1 << 40, "image is 1099511627776x1099511627776 = 1208925819614629000 megapixels, over the 100 megapixel limit"},
		{1<<62 + 1, 4, "image is 4611686018427387905x4 = 18446744073709.55 megapixels, over the 100 megapixel limit"},
	}
	for _, tt := range tests {
		err := CheckPixels(tt.w, tt.h, lim)
		if tt.want == "" {
			if err != nil {
				t.Errorf("checkPixels(%d, %d) = %v, want nil", tt.w, tt.h, err)
			}
			continue
		}
		var ce *convert.Error
		if !errors.As(err, &ce) || ce.Message != tt.want {
			t.Errorf("checkPixels(%d, %d) = %v, want %q", tt.w, tt.h, err, tt.want)
		}
	}
}
