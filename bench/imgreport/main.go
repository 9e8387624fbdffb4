// Command imgreport turns the raw results of bench/images.sh into the markdown table of
// docs/benchmarks.md: per size and conversion, each tool's median wall time over every
// hyperfine run, its ratio to vips and to ImageMagick (from the same invocations), CPU time,
// peak RSS, output size, PSNR, and convsvc's warm in-process time.
//
//	imgreport RESULTS_DIR
//
// RESULTS_DIR holds hf-SIZE-PAIR-PASS.json (hyperfine --export-json, commands named convsvc,
// vips and im) and metrics.tsv (lines: size, pair, tool, key, value).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

type hfResult struct {
	Command string    `json:"command"`
	Median  float64   `json:"median"`
	User    float64   `json:"user"`
	System  float64   `json:"system"`
	Times   []float64 `json:"times"`
}

type cell struct {
	times    []float64 // every run of every pass
	passMed  []float64 // per-pass medians, in pass order
	cpu      []float64 // per-pass mean user+sys
	rss      []float64 // KiB per /usr/bin/time run
	outBytes string
	psnr     string
	warm     string
	timeCPU  []float64 // user+sys per /usr/bin/time run
	loadAvg  []string
}

var (
	sizes = []string{"big", "small"}
	pairs = []string{"png-jpeg", "jpeg-png", "png-gif", "png-tiff", "png-webp", "jpeg-webp"}
	tools = []string{"convsvc", "vips", "im"}
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: imgreport RESULTS_DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	cells := map[string]*cell{}
	get := func(size, pair, tool string) *cell {
		k := size + "/" + pair + "/" + tool
		if cells[k] == nil {
			cells[k] = &cell{}
		}
		return cells[k]
	}
	files, _ := filepath.Glob(filepath.Join(dir, "hf-*.json"))
	slices.Sort(files)
	for _, f := range files {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".json"), "-") // hf size from to pass
		if len(parts) != 5 {
			continue
		}
		size, pair := parts[1], parts[2]+"-"+parts[3]
		b, err := os.ReadFile(f)
		if err != nil {
			fail(err)
		}
		var doc struct{ Results []hfResult }
		if err := json.Unmarshal(b, &doc); err != nil {
			fail(fmt.Errorf("%s: %w", f, err))
		}
		for _, r := range doc.Results {
			c := get(size, pair, r.Command)
			c.times = append(c.times, r.Times...)
			c.passMed = append(c.passMed, r.Median)
			c.cpu = append(c.cpu, r.User+r.System)
		}
	}
	if f, err := os.Open(filepath.Join(dir, "metrics.tsv")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fl := strings.Split(sc.Text(), "\t")
			if len(fl) != 5 {
				continue
			}
			c := get(fl[0], fl[1], fl[2])
			switch fl[3] {
			case "rss_kib":
				v, _ := strconv.ParseFloat(fl[4], 64)
				c.rss = append(c.rss, v)
			case "cpu_s":
				v, _ := strconv.ParseFloat(fl[4], 64)
				c.timeCPU = append(c.timeCPU, v)
			case "out_bytes":
				c.outBytes = fl[4]
			case "psnr":
				c.psnr = fl[4]
			case "warm":
				c.warm = fl[4]
			case "load":
				c.loadAvg = append(c.loadAvg, fl[4])
			}
		}
		f.Close()
	}

	fmt.Println("| size | conversion | tool | median wall s | /vips | /IM | CPU s (user+sys) | peak RSS MiB | output bytes | PSNR dB | convsvc warm in-process s | load avg (1 min) before each pass |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, size := range sizes {
		for _, pair := range pairs {
			v, im := cells[size+"/"+pair+"/vips"], cells[size+"/"+pair+"/im"]
			for _, tool := range tools {
				c := cells[size+"/"+pair+"/"+tool]
				if c == nil || len(c.times) == 0 {
					continue
				}
				med := median(c.times)
				warm := ""
				if tool == "convsvc" && c.warm != "" {
					warm = c.warm
				}
				load := ""
				if v != nil {
					load = strings.Join(v.loadAvg, ", ")
				}
				fmt.Printf("| %s | %s | %s | %.3f | %s | %s | %.2f | %.1f | %s | %s | %s | %s |\n",
					size, pair, tool, med, ratio(c, v), ratio(c, im), median(c.cpu), median(c.rss)/1024,
					c.outBytes, c.psnr, warm, load)
			}
		}
	}
}

// ratio is a's pooled median over b's, with the range of the per-pass ratios (same
// hyperfine invocation) in brackets.
func ratio(a, b *cell) string {
	if a == nil || b == nil || len(b.times) == 0 {
		return ""
	}
	s := fmt.Sprintf("%.2f", median(a.times)/median(b.times))
	if n := min(len(a.passMed), len(b.passMed)); n > 1 {
		var rs []float64
		for i := range n {
			rs = append(rs, a.passMed[i]/b.passMed[i])
		}
		s += fmt.Sprintf(" (%.2f–%.2f)", slices.Min(rs), slices.Max(rs))
	}
	return s
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "imgreport:", err)
	os.Exit(1)
}
