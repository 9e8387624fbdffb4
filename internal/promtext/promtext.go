// Package promtext reads the Prometheus text exposition format that /metrics serves, for the
// tests and the benchmarks that check convsvc's metrics.
package promtext

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Sample is one series of a Prometheus text exposition.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics is a parsed /metrics scrape.
type Metrics struct {
	Samples []Sample
	// Types maps a metric family to its # TYPE (counter, gauge, histogram, ...).
	Types map[string]string
}

// Parse parses the Prometheus text format (what promhttp sends without an Accept header).
func Parse(text string) (Metrics, error) {
	m := Metrics{Types: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(rest, " "); ok {
				m.Types[name] = typ
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return m, fmt.Errorf("metrics line %q: %w", line, err)
		}
		m.Samples = append(m.Samples, s)
	}
	return m, sc.Err()
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return s, err
	}
	s.Value = v
	series := line[:i]
	open := strings.IndexByte(series, '{')
	if open < 0 {
		s.Name = series
		return s, nil
	}
	s.Name = series[:open]
	rest := strings.TrimSuffix(series[open+1:], "}")
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 || eq+1 >= len(rest) || rest[eq+1] != '"' {
			return s, fmt.Errorf("bad labels")
		}
		key := rest[:eq]
		var val strings.Builder
		j := eq + 2
		for ; j < len(rest) && rest[j] != '"'; j++ {
			if rest[j] == '\\' && j+1 < len(rest) {
				j++
				if rest[j] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(rest[j])
		}
		s.Labels[key] = val.String()
		rest = strings.TrimPrefix(rest[min(j+1, len(rest)):], ",")
	}
	return s, nil
}

// Find returns the samples named name whose labels include the given pairs (key, value, ...).
func (m Metrics) Find(name string, labels ...string) []Sample {
	var out []Sample
next:
	for _, s := range m.Samples {
		if s.Name != name {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.Labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// Value sums the samples Find returns (0 when there are none).
func (m Metrics) Value(name string, labels ...string) float64 {
	var sum float64
	for _, s := range m.Find(name, labels...) {
		sum += s.Value
	}
	return sum
}

// Has reports whether any sample is named name.
func (m Metrics) Has(name string) bool { return len(m.Find(name)) > 0 }
