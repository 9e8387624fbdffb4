package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/tests3"
)

// suiteLog sees every log line of every service the package's tests start.
var suiteLog = &logChecker{}

// TestMain runs the package's tests with every service logging to suiteLog, then holds the
// whole run to two promises: no log line carried a key, a token or a URL signature, and the
// suite produced every documented status of the job and format endpoints (or the table below
// says why it cannot).
func TestMain(m *testing.M) {
	testenv.SetLogSink(suiteLog)
	if os.Getenv(testenv.EnvObjectStorage) == "s3" {
		notProducible["POST /v1/jobs 502"] = "on S3 a create only presigns, without a request to S3; TestAPI_StorageUnavailableOnCreate (local blob store) produces it"
	}
	code := testpg.Run(m) // stops the private PostgreSQL server the backend tests started
	tests3.Stop()         // and the S3 server
	testenv.SetLogSink(nil)
	if code != 0 {
		os.Exit(code)
	}
	if problems := suiteLog.Problems(); len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d log lines of the suite break the logging rules:\n  %s\n", len(problems), strings.Join(problems, "\n  "))
		code = 1
	}
	if testing.Verbose() {
		fmt.Printf("log lines checked: %d (%d request lines, %d job transitions)\n", suiteLog.lines, suiteLog.requests, suiteLog.transitions)
	}
	if run := flag.Lookup("test.run"); run == nil || run.Value.String() == "" {
		if !checkCoverage() {
			code = 1
		}
	}
	os.Exit(code)
}

// notProducible says why a documented status is never seen in the suite.
var notProducible = map[string]string{
	"500":               "internal_error needs a fault inside the server (a panic, a broken disk); no request produces it",
	"POST /v1/jobs 404": "only if a key's account vanished, which the admin API does not allow (docs/decisions.md)",
	"GET /metrics 404":  "only with --metrics-listen; TestOps_MetricsListen asserts it outside the validated client",
	"GET /metrics 500":  "promhttp answers 500 only when gathering fails outright",
	"GET /readyz 500":   "readiness reports problems as 503 with reasons",
}

// checkCoverage compares the documented operations with those the suite's exchanges matched.
// Every status of the job and format endpoints must be seen or justified; the rest is listed.
func checkCoverage() bool {
	v, err := testenv.SharedValidator()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return false
	}
	seen := v.Seen()
	ok := true
	var missing, justified, other []string
	for _, op := range v.Operations() {
		if seen[op] > 0 {
			continue
		}
		method, rest, _ := strings.Cut(op, " ")
		path, status, _ := strings.Cut(rest, " ")
		reason := notProducible[op]
		if reason == "" {
			reason = notProducible[status]
		}
		strict := strings.HasPrefix(path, "/v1/jobs") || strings.HasPrefix(path, "/v1/formats")
		switch {
		case strict && reason == "":
			missing = append(missing, op)
		case strict || reason != "":
			justified = append(justified, fmt.Sprintf("%-40s %s", op, reason))
		default:
			other = append(other, method+" "+path+" "+status)
		}
	}
	if len(missing) > 0 {
		ok = false
		fmt.Fprintf(os.Stderr, "FAIL: documented statuses of the job and format endpoints that no test produced:\n  %s\n", strings.Join(missing, "\n  "))
	}
	if testing.Verbose() {
		fmt.Printf("OpenAPI coverage: %d of %d documented operation statuses seen\n", len(v.Operations())-len(missing)-len(justified)-len(other), len(v.Operations()))
		fmt.Printf("not exercised, with the reason:\n  %s\n", strings.Join(justified, "\n  "))
		if len(other) > 0 {
			fmt.Printf("not exercised by this package (admin, storage and operations; other packages' tests cover some):\n  %s\n", strings.Join(other, "\n  "))
		}
	}
	return ok
}

var (
	signature = regexp.MustCompile(`sig=[0-9a-fA-F]{8,}`)
	idInRoute = regexp.MustCompile(`(job|acct|key)_[0-9A-Za-z]`)
)

// logChecker checks every JSON log line written to it against the logging rules.
type logChecker struct {
	mu                           sync.Mutex
	partial                      []byte
	lines, requests, transitions int
	problems                     []string
}

// Write checks whole lines and keeps a trailing partial line for the next Write.
func (c *logChecker) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		line := string(c.partial[:i])
		c.partial = c.partial[i+1:]
		c.check(line)
	}
	return len(p), nil
}

func (c *logChecker) check(line string) {
	c.lines++
	for _, problem := range checkLogLine(line) {
		if len(c.problems) < 50 {
			c.problems = append(c.problems, problem+": "+line)
		}
	}
	switch {
	case strings.Contains(line, `"msg":"request"`):
		c.requests++
	case strings.Contains(line, `"msg":"job transition"`):
		c.transitions++
	}
}

// Problems lists the broken rules found so far.
func (c *logChecker) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.problems)
}

// checkLogLine returns what is wrong with one log line: a secret in it, or a request or job
// transition line without its fields.
func checkLogLine(line string) []string {
	var problems []string
	for _, secret := range []string{"cs_live_", "cs_admin_", "Bearer "} {
		if strings.Contains(line, secret) {
			problems = append(problems, "contains "+strings.TrimSpace(secret))
		}
	}
	if signature.MatchString(line) {
		problems = append(problems, "contains a URL signature")
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		return append(problems, "not a JSON object")
	}
	switch rec["msg"] {
	case "request":
		for _, f := range []string{"request_id", "method", "route", "status", "duration_ms"} {
			if rec[f] == nil || rec[f] == "" {
				problems = append(problems, "request line without "+f)
			}
		}
		route, _ := rec["route"].(string)
		if idInRoute.MatchString(route) {
			problems = append(problems, "route carries an id")
		}
		status, _ := rec["status"].(float64)
		if strings.HasPrefix(route, "/v1/jobs") && status >= 200 && status < 300 && rec["account_id"] == nil {
			problems = append(problems, "authenticated request line without account_id")
		}
	case "job transition":
		if rec["job_id"] == nil || rec["status"] == nil {
			problems = append(problems, "job transition without job_id or status")
		}
		// Expiry and crash recovery only learn job ids from the store.
		if _, ok := rec["attempt"]; !ok && rec["reason"] == nil {
			problems = append(problems, "job transition without attempt")
		}
	}
	return problems
}
