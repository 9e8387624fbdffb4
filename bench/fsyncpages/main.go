//go:build linux

// Command fsyncpages measures what a bbolt commit's two fdatasyncs cost on this disk as the
// number of pages the commit dirtied grows: it writes N 4 KiB pages into a preallocated file
// (scattered at random, or side by side), calls fdatasync, then rewrites page 0 (bbolt's meta
// page) and calls fdatasync again, and prints the median and 90th percentile of each. The file
// is written in full first, so no fdatasync has blocks to allocate.
//
//	go run ./bench/fsyncpages [-dir DIR] [-pages 1,4,12,23,33] [-n 400]
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	pageSize   = 4096
	filePages  = 16384      // 64 MiB
	tmpfsMagic = 0x01021994 // statfs f_type of tmpfs
)

func main() {
	dir := flag.String("dir", os.TempDir(), "directory for the scratch file (put it on the disk convsvc's data dir uses)")
	counts := flag.String("pages", "1,4,12,23,33", "pages dirtied per commit, comma-separated")
	n := flag.Int("n", 400, "commits per page count and layout")
	flag.Parse()
	if err := run(*dir, *counts, *n); err != nil {
		fmt.Fprintln(os.Stderr, "fsyncpages:", err)
		os.Exit(1)
	}
}

func run(dir, counts string, n int) error {
	var pages []int
	for field := range strings.SplitSeq(counts, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || p < 1 || p >= filePages {
			return fmt.Errorf("-pages: %q is not a page count from 1 to %d", field, filePages-1)
		}
		pages = append(pages, p)
	}
	if n < 1 {
		return fmt.Errorf("-n %d: need at least one commit", n)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return err
	}
	if fs.Type == tmpfsMagic {
		fmt.Fprintf(os.Stderr, "fsyncpages: %s is on tmpfs, where fdatasync does nothing; pass -dir on a disk\n", dir)
	}
	f, err := os.CreateTemp(dir, ".fsyncpages-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, filePages*pageSize)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	fmt.Printf("fdatasync after N dirty 4 KiB pages, then after rewriting page 0; %d commits each, %s\n\n", n, f.Name())
	fmt.Println("| pages | layout | data fdatasync p50 | p90 | meta fdatasync p50 | p90 |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, p := range pages {
		for _, scattered := range []bool{true, false} {
			data, meta, err := measure(f, p, n, scattered)
			if err != nil {
				return err
			}
			layout := "side by side"
			if scattered {
				layout = "scattered"
			}
			slices.Sort(data)
			slices.Sort(meta)
			fmt.Printf("| %d | %s | %s | %s | %s | %s |\n", p, layout,
				us(pct(data, 50)), us(pct(data, 90)), us(pct(meta, 50)), us(pct(meta, 90)))
		}
	}
	return nil
}

// measure runs n commits of p dirty pages and returns the two fdatasyncs' times.
func measure(f *os.File, p, n int, scattered bool) (data, meta []time.Duration, err error) {
	page := make([]byte, pageSize)
	fd := int(f.Fd())
	for range n {
		start := 1 + rand.IntN(filePages-p)
		for i := range p {
			at := start + i
			if scattered {
				at = 1 + rand.IntN(filePages-1)
			}
			page[0]++
			if _, err := f.WriteAt(page, int64(at)*pageSize); err != nil {
				return nil, nil, err
			}
		}
		t := time.Now()
		if err := syscall.Fdatasync(fd); err != nil {
			return nil, nil, err
		}
		data = append(data, time.Since(t))
		if _, err := f.WriteAt(page, 0); err != nil {
			return nil, nil, err
		}
		t = time.Now()
		if err := syscall.Fdatasync(fd); err != nil {
			return nil, nil, err
		}
		meta = append(meta, time.Since(t))
	}
	return data, meta, nil
}

// pct is the p-th percentile of sorted.
func pct(sorted []time.Duration, p int) time.Duration { return sorted[(len(sorted)-1)*p/100] }

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
