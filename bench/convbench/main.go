// Command convbench runs convsvc's own converter (standard.NewCatalog(...).Convert) on one file,
// so the conversion benchmark compares converter with converter: the same work `vips copy` or
// ImageMagick's `convert` does per invocation, without HTTP, storage or queueing.
//
//	convbench [-q 85] [-width W] [-repeat N] [-verify] [-cpuprofile FILE] FROM TO IN OUT
//
// FROM and TO are format ids (png, jpeg, gif, tiff, webp, ...). With -repeat N the conversion
// runs N more times in the same process after the first, and the median wall time of those warm
// runs is printed to stderr: the cost inside a long-running server, without process start-up.
// With -verify the output's check (Catalog.Verify, what a worker runs before a job succeeds)
// runs as often as the conversion did, and the process CPU of both is printed with their
// ratio: the check's cost per family (docs/benchmarks.md).
//
// Built with -tags convbench_audio or convbench_image, the binary holds that family alone
// (families_*.go): its peak RSS is then the converter's, without the pages and package
// initialisation of every other family in the one convsvc binary (bench/smallrss.sh).
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
	"github.com/convsvc/convsvc/internal/cputime"
)

func main() {
	quality := flag.Int("q", 0, "quality option (0: the converter's default; ignored where the target takes none)")
	width := flag.Int("width", 0, "width option: resize to this width, keeping the aspect ratio (0: no resize)")
	repeat := flag.Int("repeat", 0, "extra warm runs in this process; prints their median to stderr")
	verify := flag.Bool("verify", false, "also check the output as many times (Catalog.Verify) and print the CPU of both")
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
	if err := run(flag.Arg(0), flag.Arg(1), flag.Arg(2), flag.Arg(3), *quality, *width, *repeat, *verify, *cpuprofile, *memprofile); err != nil {
		fmt.Fprintln(os.Stderr, "convbench:", err)
		os.Exit(1)
	}
}

func run(from, to, in, out string, quality, width, repeat int, verify bool, cpuprofile, memprofile string) error {
	cat := newCatalog()
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
	cpu0 := cputime.Self()
	for i := 0; i <= repeat; i++ {
		t0 := time.Now()
		if err := once(cat, from, to, opts, in, out, scratch); err != nil {
			return err
		}
		if i > 0 {
			warm = append(warm, time.Since(t0))
		}
	}
	convCPU := cputime.Self() - cpu0
	if verify {
		checkCPU, err := verifyRuns(cat, from, to, opts, in, out, repeat+1)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "cpu per run: conversion %.1f ms, check %.1f ms (%.1f%% of the conversion)\n",
			ms(convCPU)/float64(repeat+1), ms(checkCPU)/float64(repeat+1), 100*float64(checkCPU)/float64(convCPU))
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
	if _, err := cat.Convert(context.Background(), from, to, opts, src, io.Writer(dst), scratch); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// verifyRuns checks the output n times and returns the process CPU spent.
func verifyRuns(cat *convert.Catalog, from, to string, opts convert.Options, in, out string, n int) (time.Duration, error) {
	src, err := os.Open(in)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := os.Open(out)
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	st, err := dst.Stat()
	if err != nil {
		return 0, err
	}
	if !cat.Verifies(to, opts) {
		return 0, fmt.Errorf("%s outputs have no check", to)
	}
	cpu0 := cputime.Self()
	for range n {
		if _, err := cat.Verify(context.Background(), from, to, opts, src, dst, st.Size()); err != nil {
			return 0, err
		}
	}
	return cputime.Self() - cpu0, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
