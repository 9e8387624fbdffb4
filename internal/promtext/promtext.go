// Package promtext reads the Prometheus text exposition format that /metrics serves, for the
// tests and the benchmarks that check convsvc's metrics. Prometheus's own parser
// (prometheus/common/expfmt) reads the text, so a scrape that parses here is one a Prometheus
// server takes; this package only flattens its metric families into the samples of the text.
package promtext

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a Prometheus text exposition.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics is a parsed /metrics scrape.
type Metrics struct {
	// Samples are the series as the text writes them: a histogram's are name_bucket (with
	// its le label), name_sum and name_count, a summary's name (with quantile), name_sum and
	// name_count. Families come in name order.
	Samples []Sample
	// Types maps a metric family to its # TYPE (counter, gauge, histogram, ...).
	Types map[string]string
}

// Parse parses the Prometheus text format (what promhttp sends without an Accept header).
func Parse(text string) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return Metrics{}, fmt.Errorf("metrics: %w", err)
	}
	m := Metrics{Types: map[string]string{}}
	for _, name := range slices.Sorted(maps.Keys(families)) {
		f := families[name]
		m.Types[name] = strings.ToLower(f.GetType().String())
		for _, metric := range f.GetMetric() {
			m.Samples = append(m.Samples, samples(name, f.GetType(), metric)...)
		}
	}
	return m, nil
}

// samples writes out one metric of a family as the text's series.
func samples(name string, typ dto.MetricType, metric *dto.Metric) []Sample {
	labels := map[string]string{}
	for _, l := range metric.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	sample := func(suffix string, v float64, extra ...string) Sample {
		ls := maps.Clone(labels)
		for i := 0; i+1 < len(extra); i += 2 {
			ls[extra[i]] = extra[i+1]
		}
		return Sample{Name: name + suffix, Labels: ls, Value: v}
	}
	bound := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch typ {
	case dto.MetricType_COUNTER:
		return []Sample{sample("", metric.GetCounter().GetValue())}
	case dto.MetricType_GAUGE:
		return []Sample{sample("", metric.GetGauge().GetValue())}
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := metric.GetHistogram()
		var out []Sample
		for _, b := range h.GetBucket() {
			out = append(out, sample("_bucket", float64(b.GetCumulativeCount())+b.GetCumulativeCountFloat(), "le", bound(b.GetUpperBound())))
		}
		return append(out, sample("_sum", h.GetSampleSum()), sample("_count", float64(h.GetSampleCount())+h.GetSampleCountFloat()))
	case dto.MetricType_SUMMARY:
		s := metric.GetSummary()
		var out []Sample
		for _, q := range s.GetQuantile() {
			out = append(out, sample("", q.GetValue(), "quantile", bound(q.GetQuantile())))
		}
		return append(out, sample("_sum", s.GetSampleSum()), sample("_count", float64(s.GetSampleCount())))
	default:
		return []Sample{sample("", metric.GetUntyped().GetValue())}
	}
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
