// Command convbench runs convsvc's own converter (standard.NewCatalog(...).Convert) on one file,
// so the conversion benchmark compares converter with converter: the same work `vips copy` or
// ImageMagick's `convert` does per invocation, without HTTP, storage or queueing.
//
//	convbench [-q 85] [-w 800] [-repeat N] [-cpuprofile FILE] FROM TO IN OUT
//
// FROM and TO are format ids (png, jpeg, gif, tiff, webp, ...). With -repeat N the conversion
// runs N more times in the same process after the first, and the median wall time of those warm
// runs is printed to stderr: the cost inside a long-running server, without process start-up.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
)

func main() {
	quality := flag.Int("q", 0, "quality option (0: the converter's default; ignored where the target takes none)")
	width := flag.Int("w", 0, "resize to this width, keeping the aspect ratio (0: no resize)")
	repeat := flag.Int("repeat", 0, "extra warm runs in this process; prints their median to stderr")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of all runs to this file")
	memprofile := flag.String("memprofile", "", "write an allocation profile to this file at exit")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: convbench [flags] FROM TO IN OUT")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 4 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), flag.Arg(2), flag.Arg(3), *quality, *width, *repeat, *cpuprofile, *memprofile); err != nil {
		fmt.Fprintln(os.Stderr, "convbench:", err)
		os.Exit(1)
	}
}

func run(from, to, in, out string, quality, width, repeat int, cpuprofile, memprofile string) error {
	cat := standard.NewCatalog(convert.Limits{})
	target, ok := cat.Format(to)
	if !ok {
		return fmt.Errorf("unknown target format %q", to)
	}
	var opts convert.Options
	if quality != 0 && slices.Contains(target.Options, convert.OptQuality) {
		opts.Quality = quality
	}
	opts.Width = width
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	scratch, err := os.MkdirTemp(filepath.Dir(out), ".convbench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	var warm []time.Duration
	for i := 0; i <= repeat; i++ {
		t0 := time.Now()
		if err := once(cat, from, to, opts, in, out, scratch); err != nil {
			return err
		}
		if i > 0 {
			warm = append(warm, time.Since(t0))
		}
	}
	if len(warm) > 0 {
		slices.Sort(warm)
		fmt.Fprintf(os.Stderr, "warm runs: %d, median %.1f ms, min %.1f ms, max %.1f ms\n", len(warm),
			ms(warm[len(warm)/2]), ms(warm[0]), ms(warm[len(warm)-1]))
	}
	if memprofile != "" {
		f, err := os.Create(memprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}
	return nil
}

func once(cat *convert.Catalog, from, to string, opts convert.Options, in, out, scratch string) error {
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := cat.Convert(context.Background(), from, to, opts, src, io.Writer(dst), scratch); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
