//go:build linux

package cli_test

import (
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
)

// photoPNG writes a w x h photo-like PNG (gradients with noise, opaque RGB) to dir.
func photoPNG(t *testing.T, dir string, w, h int) string {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := m.PixOffset(x, y)
			n := byte(rng.IntN(24))
			m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = byte(x*200/w)+n, byte(y*200/h)+n, byte((x+y)*100/(w+h))+n, 255
		}
	}
	path := filepath.Join(dir, "photo.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(f, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// skipPeakRSSUnderRace skips a peak-RSS test in a -race build, before it makes its input
// (under the detector the 25 MP PNG alone took 187 s at a load of 20): the child's peak would
// include this process's resident set at the fork, which the race detector makes hundreds of
// MiB (581 MiB for a 25 MP PNG -> JPEG in a -race run). The plain run measures it.
func skipPeakRSSUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("peak RSS is measured in the plain run; under -race the parent's shadow memory counts")
	}
}

// peakRSS runs a one-shot convert and returns its peak resident set in MiB. The kernel folds
// the high-water mark of the memory a child had before its exec (this test's, shared until
// then) into the child's, so the test first returns its own garbage and resets its mark
// (clear_refs 5): the figure is then the child's peak, or this process's small resident set
// if that were larger.
func peakRSS(t *testing.T, in, to string) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset this process's peak RSS: %v", err)
	}
	cmd := exec.Command(binary, "convert", in, "--to", to, "--output-dir", t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("convert %s --to %s: %v\n%s", filepath.Base(in), to, err, b)
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // KiB on Linux
}

// A one-shot 12 MP PNG -> AVIF stays within 3x ImageMagick's peak for the same file (332 MB,
// docs/benchmarks.md): the AV1 encoder's WebAssembly memory is a mapping of its own that grows
// without copies (377-471 MiB measured; 1,377 MiB before).
func TestConvert_PeakMemory_AVIF12MP(t *testing.T) {
	skipPeakRSSUnderRace(t)
	in := photoPNG(t, t.TempDir(), 4000, 3000)
	if peak := peakRSS(t, in, "avif"); peak > 950 {
		t.Errorf("12 MP PNG -> AVIF peaked at %d MiB, want under 950 (3x ImageMagick's 332 MB)", peak)
	} else {
		t.Logf("12 MP PNG -> AVIF: peak RSS %d MiB", peak)
	}
}

// A one-shot 25 MP PNG -> JPEG streams rows through a ring instead of holding the decoded
// image (95 MiB of RGBA here, 381 MiB at 100 MP): the whole process, embedded server
// included, stays under 100 MiB (vips copy takes 55 MiB at 100 MP).
func TestConvert_PeakMemory_PNGToJPEG25MP(t *testing.T) {
	skipPeakRSSUnderRace(t)
	in := photoPNG(t, t.TempDir(), 5000, 5000)
	if peak := peakRSS(t, in, "jpeg"); peak > 100 {
		t.Errorf("25 MP PNG -> JPEG peaked at %d MiB, want under 100", peak)
	} else {
		t.Logf("25 MP PNG -> JPEG: peak RSS %d MiB", peak)
	}
}
