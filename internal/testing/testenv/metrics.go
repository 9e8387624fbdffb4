package testenv

import (
	"time"

	"github.com/convsvc/convsvc/internal/promtext"
)

// Scrape GETs /metrics through the validating client and parses it, failing the test on error.
func (e *Env) Scrape() promtext.Metrics {
	e.T.Helper()
	r := e.Do("GET", e.Main.MetricsURL(), "", nil)
	MustStatus(e.T, r, 200, "")
	m, err := promtext.Parse(string(r.Body))
	if err != nil {
		e.T.Fatal(err)
	}
	return m
}

// ScrapeUntil scrapes /metrics until ready holds of them (for up to Scale(30 s)) and returns
// that scrape, or the last one. A conversion's outcome is counted after its finish commits,
// so a client that saw the job end can scrape before the count: tests of those counters wait
// for them to arrive, then assert their exact values.
func (e *Env) ScrapeUntil(ready func(promtext.Metrics) bool) promtext.Metrics {
	e.T.Helper()
	deadline := time.Now().Add(Scale(30 * time.Second))
	for {
		m := e.Scrape()
		if ready(m) || time.Now().After(deadline) {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
}
