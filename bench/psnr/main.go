// Command psnr prints the peak signal-to-noise ratio of an image against a reference, over the
// R, G and B channels at 8 bits (composited over white where there is alpha), in dB; "inf"
// when the pixels are identical. It reads PNG, JPEG, GIF, TIFF, BMP and WebP.
//
//	go run ./bench/psnr reference.png converted.jpg
package main

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"

	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: psnr REFERENCE IMAGE")
		os.Exit(2)
	}
	ref, err := load(os.Args[1])
	if err != nil {
		fail(err)
	}
	img, err := load(os.Args[2])
	if err != nil {
		fail(err)
	}
	if ref.Bounds().Size() != img.Bounds().Size() {
		fail(fmt.Errorf("sizes differ: %v and %v", ref.Bounds().Size(), img.Bounds().Size()))
	}
	mse := meanSquaredError(ref, img)
	if mse == 0 {
		fmt.Println("inf")
		return
	}
	fmt.Printf("%.2f\n", 10*math.Log10(255*255/mse))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "psnr:", err)
	os.Exit(1)
}

func load(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, _, err := image.Decode(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func meanSquaredError(a, b image.Image) float64 {
	ab, bb := a.Bounds(), b.Bounds()
	var sum float64
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			r1, g1, b1 := rgb8(a.At(ab.Min.X+x, ab.Min.Y+y))
			r2, g2, b2 := rgb8(b.At(bb.Min.X+x, bb.Min.Y+y))
			dr, dg, db := r1-r2, g1-g2, b1-b2
			sum += dr*dr + dg*dg + db*db
		}
	}
	return sum / float64(3*ab.Dx()*ab.Dy())
}

// rgb8 is c at 8 bits per channel, composited over white.
func rgb8(c color.Color) (r, g, b float64) {
	n := color.NRGBA64Model.Convert(c).(color.NRGBA64)
	a := float64(n.A) / 0xffff
	over := func(v uint16) float64 { return math.Round((float64(v)/0xffff*a + (1 - a)) * 255) }
	return over(n.R), over(n.G), over(n.B)
}
