package promtext

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// A registry's own text output, as promhttp would send it, comes back as its series.
func TestParse_RegistryOutput(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reqs_total", Help: "Requests."}, []string{"route", "status"})
	queue := prometheus.NewGauge(prometheus.GaugeOpts{Name: "queue_depth", Help: "Queued."})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Help: "Latency.", Buckets: []float64{0.1, 1}}, []string{"route"})
	sum := prometheus.NewSummary(prometheus.SummaryOpts{Name: "size_bytes", Help: "Sizes.", Objectives: map[float64]float64{0.5: 0.05}})
	reg.MustRegister(reqs, queue, lat, sum)
	reqs.WithLabelValues("/v1/jobs", "200").Add(3)
	reqs.WithLabelValues("/v1/jobs", "429").Inc()
	reqs.WithLabelValues("a \"quoted\"\nline\\", "200").Inc()
	queue.Set(7)
	for _, v := range []float64{0.05, 0.5, 5} {
		lat.WithLabelValues("/v1/jobs").Observe(v)
	}
	sum.Observe(10)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Parse(text.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, text.String())
	}
	checks := []struct {
		what      string
		got, want float64
	}{
		{"all requests", m.Value("reqs_total"), 5},
		{"200s", m.Value("reqs_total", "status", "200"), 4},
		{"one route's 429s", m.Value("reqs_total", "route", "/v1/jobs", "status", "429"), 1},
		{"escaped label value", m.Value("reqs_total", "route", "a \"quoted\"\nline\\"), 1},
		{"gauge", m.Value("queue_depth"), 7},
		{"bucket 0.1", m.Value("lat_seconds_bucket", "le", "0.1"), 1},
		{"bucket 1", m.Value("lat_seconds_bucket", "le", "1"), 2},
		{"bucket +Inf", m.Value("lat_seconds_bucket", "route", "/v1/jobs", "le", "+Inf"), 3},
		{"histogram count", m.Value("lat_seconds_count"), 3},
		{"histogram sum", m.Value("lat_seconds_sum"), 5.55},
		{"summary median", m.Value("size_bytes", "quantile", "0.5"), 10},
		{"summary count", m.Value("size_bytes_count"), 1},
		{"absent", m.Value("nope"), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	for name, typ := range map[string]string{"reqs_total": "counter", "queue_depth": "gauge", "lat_seconds": "histogram", "size_bytes": "summary"} {
		if m.Types[name] != typ {
			t.Errorf("%s: type %q, want %q", name, m.Types[name], typ)
		}
	}
	if !m.Has("lat_seconds_bucket") || m.Has("lat_seconds") {
		t.Error("a histogram's series are its _bucket, _sum and _count, not its family name")
	}
}

// What Prometheus would refuse is an error, not a partial scrape.
func TestParse_Malformed(t *testing.T) {
	for _, text := range []string{
		"reqs_total{route=\"/v1/jobs\" 3\n",             // unterminated label set
		"reqs_total three\n",                            // not a number
		"# TYPE reqs_total counter\nreqs_total 1 2 3\n", // trailing garbage
		"reqs_total{route=\"x\",route=\"y\"} 1\n",       // duplicate label
	} {
		if _, err := Parse(text); err == nil {
			t.Errorf("Parse(%q) accepted it", text)
		} else if !strings.HasPrefix(err.Error(), "metrics: ") {
			t.Errorf("Parse(%q): %v; want the metrics: prefix", text, err)
		}
	}
}
