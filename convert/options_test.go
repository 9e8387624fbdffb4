package convert

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"testing"
)

func TestOptions_Validate(t *testing.T) {
	cat := NewCatalog(Limits{})
	jpegF, _ := cat.Format("jpeg")
	pngF, _ := cat.Format("png")
	yes := true
	tests := []struct {
		name   string
		target Format
		opts   Options
		option string // "" means valid
	}{
		{"none", pngF, Options{}, ""},
		{"quality for jpeg", jpegF, Options{Quality: 90}, ""},
		{"quality for png", pngF, Options{Quality: 90}, OptQuality},
		{"quality 0 is unset", jpegF, Options{Quality: 0}, ""},
		{"quality 101", jpegF, Options{Quality: 101}, OptQuality},
		{"quality -1", jpegF, Options{Quality: -1}, OptQuality},
		{"width only", pngF, Options{Width: 100}, ""},
		{"negative width", pngF, Options{Width: -1}, OptWidth},
		{"huge height", pngF, Options{Height: MaxDimension + 1}, OptHeight},
		{"fit without box", pngF, Options{Width: 10, Fit: FitCover}, OptFit},
		{"unknown fit", pngF, Options{Width: 10, Height: 10, Fit: "stretch"}, OptFit},
		{"cover", pngF, Options{Width: 10, Height: 10, Fit: FitCover}, ""},
		{"page for png (pdf input)", pngF, Options{Page: 2}, ""},
		{"lossless for jpeg", jpegF, Options{Lossless: &yes}, OptLossless},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate(tt.target)
			var oe *OptionError
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
		opts       Options
		wantW, wer int
	}{
		{Options{Width: 100}, 100, 50},
		{Options{Height: 50}, 100, 50},
		{Options{Width: 100, Height: 100}, 100, 50},                 // contain
		{Options{Width: 100, Height: 100, Fit: FitCover}, 100, 100}, // cover crops
		{Options{Width: 100, Height: 100, Fit: FitFill}, 100, 100},
		{Options{Width: 800}, 800, 400},
	}
	for _, tt := range tests {
		got, err := resize(context.Background(), src, tt.opts, Limits{MaxPixels: 1e6})
		if err != nil {
			t.Fatal(err)
		}
		if b := got.Bounds(); b.Dx() != tt.wantW || b.Dy() != tt.wer {
			t.Errorf("%+v: got %dx%d, want %dx%d", tt.opts, b.Dx(), b.Dy(), tt.wantW, tt.wer)
		}
	}
	if _, err := resize(context.Background(), src, Options{Width: 20000, Height: 20000, Fit: FitFill}, Limits{MaxPixels: 1e6}); err == nil {
		t.Fatal("a resize over the pixel limit must fail before allocating")
	}
}

func TestConvert_OptionsReachTheEncoder(t *testing.T) {
	c := NewCatalog(Limits{})
	size := func(q int) int {
		var out bytes.Buffer
		err := c.Convert(context.Background(), "png", "jpeg", Options{Quality: q, Width: 32}, openFile(t, "../testdata/images/sample.png"), &out, t.TempDir())
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

func TestOptions_ValidateInput(t *testing.T) {
	if err := (Options{Page: 2, DPI: 300}).ValidateInput("pdf"); err != nil {
		t.Fatal(err)
	}
	if err := (Options{DPI: 300}).ValidateInput("svg"); err != nil {
		t.Fatal(err)
	}
	var oe *OptionError
	if err := (Options{Page: 2}).ValidateInput("png"); !errors.As(err, &oe) || oe.Option != OptPage {
		t.Fatalf("page for png input: %v", err)
	}
	if err := (Options{DPI: 300}).ValidateInput("jpeg"); !errors.As(err, &oe) || oe.Option != OptDPI {
		t.Fatalf("dpi for jpeg input: %v", err)
	}
}
