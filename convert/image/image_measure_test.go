//go:build linux

package image

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/internal/cputime"
)

// TestImageMeasure measures what the memory estimates and the report rest on, each figure in
// a fresh process: peak RSS of one conversion per pixel (for imageCodec's costs), and the
// first and second call of every wasm-backed codec (module compilation). It takes minutes, so
// it runs only with CONVSVC_MEASURE=1:
//
//	CONVSVC_MEASURE=1 go test -run TestImageMeasure -v ./convert/
func TestImageMeasure(t *testing.T) {
	if pair := os.Getenv("CONVSVC_MEASURE_CHILD"); pair != "" {
		measureChild(t, pair)
		return
	}
	if os.Getenv("CONVSVC_MEASURE") == "" {
		t.Skip("set CONVSVC_MEASURE=1 to measure memory and first-call costs")
	}
	size := 4000
	if s := os.Getenv("CONVSVC_MEASURE_WIDTH"); s != "" {
		size, _ = strconv.Atoi(s)
	}
	dir := t.TempDir()
	inputs := measureInputs(t, dir, size, size*3/4)
	pairs := []string{
		"png>jpeg", "jpeg>png", "png>gif", "png>bmp", "bmp>png", "tiff>png", "png>tiff",
		"png>webp", "webp>png", "png>webpll", "webpll>png", "png>avif", "avif>png", "jxl>png",
		"png>qoi", "qoi>png", "png>ppm", "ppm>png",
	}
	if p := os.Getenv("CONVSVC_MEASURE_PAIRS"); p != "" {
		pairs = strings.Split(p, ",")
	}
	px := float64(size * size * 3 / 4)
	for _, pair := range pairs {
		from, _, _ := strings.Cut(pair, ">")
		cmd := exec.Command(os.Args[0], "-test.run=^TestImageMeasure$", "-test.v")
		cmd.Env = append(os.Environ(), "CONVSVC_MEASURE_CHILD="+pair, "CONVSVC_MEASURE_INPUT="+inputs[from])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", pair, err, out)
			continue
		}
		var base, peak int64
		var first, second, firstCPU, secondCPU time.Duration
		for _, line := range strings.Split(string(out), "\n") {
			if _, rest, ok := strings.Cut(line, "MEASURE "); ok {
				fmt.Sscanf(rest, "base=%d peak=%d first=%d second=%d firstcpu=%d secondcpu=%d", &base, &peak, &first, &second, &firstCPU, &secondCPU)
			}
		}
		t.Logf("%-12s peak RSS %5d MiB (+%5d MiB over the idle process, %5.1f B/px)  first %6.0f ms (CPU %6.0f), second %6.0f ms (CPU %6.0f)",
			pair, peak>>20, (peak-base)>>20, float64(peak-base)/px, ms(first), ms(firstCPU), ms(second), ms(secondCPU))
	}
}

// measureInputs writes one w x h photo-like image in every format measured.
func measureInputs(t *testing.T, dir string, w, h int) map[string]string {
	src := testimg.Photo(w, h)
	paths := map[string]string{}
	lossless := true
	for _, f := range []struct {
		name, codec string
		opts        convert.Options
	}{
		{"png", "png", convert.Options{}}, {"jpeg", "jpeg", convert.Options{}}, {"bmp", "bmp", convert.Options{}}, {"tiff", "tiff", convert.Options{}},
		{"webp", "webp", convert.Options{}}, {"webpll", "webp", convert.Options{Lossless: &lossless}}, {"avif", "avif", convert.Options{}},
		{"qoi", "qoi", convert.Options{}}, {"ppm", "ppm", convert.Options{}},
	} {
		var buf bytes.Buffer
		if err := CodecByID(f.codec).Encode(context.Background(), &buf, src, f.opts); err != nil {
			t.Fatal(err)
		}
		paths[f.name] = filepath.Join(dir, "input."+f.name)
		if err := os.WriteFile(paths[f.name], buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("cjxl"); err == nil {
		paths["jxl"] = filepath.Join(dir, "input.jxl")
		if out, err := exec.Command("cjxl", "--quiet", "-d", "1", "-e", "3", paths["png"], paths["jxl"]).CombinedOutput(); err != nil {
			t.Fatalf("cjxl: %v\n%s", err, out)
		}
	}
	return paths
}

// measureChild converts its input twice, reporting the process's RSS before, its peak
// (VmHWM, after the first conversion) and both durations.
func measureChild(t *testing.T, pair string) {
	from, to, _ := strings.Cut(pair, ">")
	opts := convert.Options{}
	if to == "webpll" {
		lossless := true
		to, opts.Lossless = "webp", &lossless
	}
	if from == "webpll" {
		from = "webp"
	}
	c := testCatalog(convert.Limits{})
	input := os.Getenv("CONVSVC_MEASURE_INPUT")
	base := procStatus(t, "VmRSS")
	var times, cpu [2]time.Duration
	var peak int64
	for i := range times {
		f, err := os.Open(input)
		if err != nil {
			t.Fatal(err)
		}
		start, startCPU := time.Now(), cputime.Self()
		_, err = c.Convert(context.Background(), from, to, opts, f, io.Discard, t.TempDir())
		times[i], cpu[i] = time.Since(start), cputime.Self()-startCPU
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			peak = procStatus(t, "VmHWM")
		}
	}
	fmt.Printf("MEASURE base=%d peak=%d first=%d second=%d firstcpu=%d secondcpu=%d\n", base, peak, times[0], times[1], cpu[0], cpu[1])
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// procStatus reads a memory figure of this process from /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestImage_WASMLazy checks, in a fresh process, that building the catalog and converting
// a PNG to JPEG compiles no wasm module: the AVIF module alone adds about 100 MiB of RSS and
// 1.6 s of CPU on its first use, the JPEG XL one 50 MiB and 0.4 s.
func TestImage_WASMLazy(t *testing.T) {
	if os.Getenv("CONVSVC_LAZY_CHILD") != "" {
		base := procStatus(t, "VmRSS")
		start := cputime.Self()
		c := testCatalog(convert.Limits{})
		if _, err := c.Convert(context.Background(), "png", "jpeg", convert.Options{}, openFile(t, "../../testdata/images/sample.png"), io.Discard, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("LAZY grew=%d cpu=%d\n", procStatus(t, "VmHWM")-base, cputime.Self()-start)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestImage_WASMLazy$", "-test.v")
	cmd.Env = append(os.Environ(), "CONVSVC_LAZY_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var grew int64
	var cpu time.Duration
	for _, line := range strings.Split(string(out), "\n") {
		if _, rest, ok := strings.Cut(line, "LAZY "); ok {
			fmt.Sscanf(rest, "grew=%d cpu=%d", &grew, &cpu)
		}
	}
	t.Logf("catalog and a PNG to JPEG conversion: RSS +%d KiB, %v CPU", grew>>10, cpu)
	if grew > 40<<20 || cpu > time.Second*raceSlowdown/2 {
		t.Errorf("RSS grew %d MiB and %v of CPU went by: a wasm module was compiled eagerly?", grew>>20, cpu)
	}
}
