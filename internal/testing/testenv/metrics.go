package testenv

import "github.com/convsvc/convsvc/internal/promtext"

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
