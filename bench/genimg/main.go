// Command genimg writes a deterministic photo-like test image as PNG and JPEG (quality 85):
// smooth colour gradients, a few sinusoids across both axes, and Gaussian noise (sigma 10) on
// every channel, so it compresses and quantizes roughly like a photograph. The same flags
// always give the same bytes.
//
//	go run ./bench/genimg -w 4000 -h 3000 -o /tmp/img/big   # writes big.png and big.jpg
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
)

func main() {
	w := flag.Int("w", 1000, "width")
	h := flag.Int("h", 1000, "height")
	out := flag.String("o", "img", "output path without extension; .png and .jpg are written")
	seed := flag.Uint64("seed", 1, "noise seed")
	flag.Parse()
	img := photo(*w, *h, *seed)
	if err := write(*out+".png", func(f *bufio.Writer) error { return png.Encode(f, img) }); err != nil {
		fail(err)
	}
	if err := write(*out+".jpg", func(f *bufio.Writer) error { return jpeg.Encode(f, img, &jpeg.Options{Quality: 85}) }); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genimg:", err)
	os.Exit(1)
}

func write(path string, enc func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := enc(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// photo draws the image row by row in parallel; each row has its own noise stream seeded by
// (seed, row), so the result does not depend on scheduling.
func photo(w, h int, seed uint64) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	rows := make(chan int, h)
	for y := range h {
		rows <- y
	}
	close(rows)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for y := range rows {
				rng := rand.New(rand.NewPCG(seed, uint64(y)))
				v := float64(y) / float64(max(h-1, 1))
				row := m.Pix[y*m.Stride : y*m.Stride+4*w]
				for x := range w {
					u := float64(x) / float64(max(w-1, 1))
					// A sky-to-ground gradient with soft waves, like a landscape at low contrast.
					r := 40 + 170*u + 25*math.Sin(7*v+2*u) + 12*math.Sin(31*u*v)
					g := 60 + 140*v + 35*math.Sin(11*u)*math.Cos(5*v)
					b := 200 - 150*v + 30*math.Cos(4*(u+v)) + 10*math.Sin(23*u)
					row[4*x] = clamp(r + 10*rng.NormFloat64())
					row[4*x+1] = clamp(g + 10*rng.NormFloat64())
					row[4*x+2] = clamp(b + 10*rng.NormFloat64())
					row[4*x+3] = 0xff
				}
			}
		})
	}
	wg.Wait()
	return m
}

func clamp(v float64) uint8 {
	return uint8(math.Round(math.Min(255, math.Max(0, v))))
}
