package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const docsPath = "../docs/webhooks.md"

// docBlock returns the fenced code block that follows the "<!-- test: name" marker in
// docs/webhooks.md, exactly as a reader copies it.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "<!-- test: "+name)
	if i < 0 {
		t.Fatalf("%s has no <!-- test: %s --> block", docsPath, name)
	}
	rest := doc[i:]
	start := strings.Index(rest, "\n```")
	if start < 0 {
		t.Fatalf("no code block after the %s marker", name)
	}
	rest = rest[start+4:]
	rest = rest[strings.Index(rest, "\n")+1:] // skip the info string
	end := strings.Index(rest, "\n```")
	if end < 0 {
		t.Fatalf("unterminated code block %s", name)
	}
	return rest[:end+1]
}

// runShell runs a docs shell block with sh in dir with the extra environment.
func runShell(t *testing.T, script, dir string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(lookTool(t, "sh", "a POSIX shell"), "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDocs_ShellVerify runs the docs' openssl verification literally: it accepts a delivery
// the Go sender signed (also with spaces and a second, rotated v1) and refuses a changed body,
// a wrong secret and an old timestamp.
func TestDocs_ShellVerify(t *testing.T) {
	lookTool(t, "openssl", "apt-get install -y openssl")
	script := docBlock(t, "shell-verify")
	secret, _ := NewSecret()
	now := time.Now()
	sig := Sign(secret, now, testBody)
	rotated := sig + ",v1=" + strings.Repeat("0", 64)
	spaced := strings.ReplaceAll(rotated, ",", ", ")
	for _, tt := range []struct {
		name, secret, sig string
		body              []byte
		ok                bool
		message           string
	}{
		{"valid", secret, sig, testBody, true, "verified"},
		{"rotated", secret, rotated, testBody, true, "verified"},
		{"spaces", secret, spaced, testBody, true, "verified"},
		{"binary body", secret, Sign(secret, now, []byte("a\x00b\nc\xff")), []byte("a\x00b\nc\xff"), true, "verified"},
		{"changed body", secret, sig, append([]byte(" "), testBody...), false, "bad signature"},
		{"wrong secret", "whsec_other", sig, testBody, false, "bad signature"},
		{"old", secret, Sign(secret, now.Add(-10*time.Minute), testBody), testBody, false, "too old"},
		{"future", secret, Sign(secret, now.Add(10*time.Minute), testBody), testBody, false, "too old"},
		{"empty secret", "", Sign("", now, testBody), testBody, false, "SECRET is empty"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "body.json"), tt.body, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := runShell(t, script, dir, "SECRET="+tt.secret, "SIG="+tt.sig)
		if (err == nil) != tt.ok || !strings.Contains(out, tt.message) {
			t.Errorf("%s: shell example said %q (%v), want ok=%v and %q", tt.name, out, err, tt.ok, tt.message)
		}
		// The Go verifier agrees.
		if goErr := Verify(tt.secret, tt.sig, tt.body, time.Now(), DefaultTolerance); (goErr == nil) != tt.ok {
			t.Errorf("%s: Verify = %v, the shell example ok=%v", tt.name, goErr, tt.ok)
		}
	}
}

// TestDocs_ShellSend runs the docs' curl example against a real receiver that verifies with
// Verify: the openssl signature is accepted, and one made with another secret is refused.
func TestDocs_ShellSend(t *testing.T) {
	lookTool(t, "openssl", "apt-get install -y openssl")
	lookTool(t, "curl", "apt-get install -y curl")
	script := docBlock(t, "shell-send")
	secret, _ := NewSecret()
	got := make(chan error, 2)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = Verify(secret, r.Header.Get(SignatureHeader), body, time.Now(), DefaultTolerance)
		}
		if err == nil && (r.Header.Get(EventIDHeader) != "evt_test" || r.Header.Get(EventTypeHeader) != EventJobSucceeded) {
			err = fmt.Errorf("headers %v", r.Header)
		}
		var ev Event
		if err == nil {
			if err = json.Unmarshal(body, &ev); err == nil && (ev.ID != "evt_test" || ev.Type != EventJobSucceeded) {
				err = fmt.Errorf("event %+v", ev)
			}
		}
		got <- err
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()

	if out, err := runShell(t, script, t.TempDir(), "SECRET="+secret, "RECEIVER_URL="+rcv.URL+"/hook"); err != nil {
		t.Fatalf("curl example failed: %v\n%s", err, out)
	}
	if err := <-got; err != nil {
		t.Fatalf("the receiver could not verify the curl example's delivery: %v", err)
	}
	out, err := runShell(t, script, t.TempDir(), "SECRET=whsec_other", "RECEIVER_URL="+rcv.URL+"/hook")
	if err == nil || !strings.Contains(out, "signature does not match") {
		t.Fatalf("a delivery signed with another secret: %v, %q; want refused", err, out)
	}
	if err := <-got; !errors.Is(err, ErrBadSignature) {
		t.Fatalf("receiver said %v, want ErrBadSignature", err)
	}
}

// TestDocs_Python runs the docs' Python verifier literally on many signed, tampered, rotated,
// stale and malformed deliveries and requires the same answer as Verify for each.
func TestDocs_Python(t *testing.T) {
	python := lookTool(t, "python3", "apt-get install -y python3")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "convsvc_verify.py"), []byte(docBlock(t, "python")), 0o644); err != nil {
		t.Fatal(err)
	}
	driver := `import base64, json, sys
from convsvc_verify import verify_convsvc
out = []
for c in json.load(sys.stdin):
    out.append(verify_convsvc(c["secret"], c["header"], base64.b64decode(c["body"])))
json.dump(out, sys.stdout)
`
	type tcase struct {
		Secret string `json:"secret"`
		Header string `json:"header"`
		Body   string `json:"body"`
		raw    []byte
	}
	now := time.Now()
	secret, _ := NewSecret()
	var cases []tcase
	add := func(secret, header string, body []byte) {
		cases = append(cases, tcase{secret, header, base64.StdEncoding.EncodeToString(body), body})
	}
	sig := Sign(secret, now, testBody)
	add(secret, sig, testBody)
	add(secret, sig+",v1="+strings.Repeat("ab", 32), testBody)
	add(secret, "v0=x, "+strings.ReplaceAll(sig, ",", ", "), testBody)
	add(secret, strings.ToUpper(sig[:2])+sig[2:], testBody) // "T=": no timestamp
	add(secret, sig, append(testBody, '\n'))
	add("whsec_other", sig, testBody)
	add(secret, Sign(secret, now.Add(-time.Hour), testBody), testBody)
	add(secret, Sign(secret, now.Add(time.Hour), testBody), testBody)
	add(secret, "", testBody)
	add(secret, "t=1,t=2,"+sig[strings.Index(sig, "v1="):], testBody)
	add(secret, "t=x,"+sig[strings.Index(sig, "v1="):], testBody)
	add(secret, Sign(secret, now, []byte("\x00\xff")), []byte("\x00\xff"))
	add("", Sign("", now, testBody), testBody)
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		at := now.Add(time.Duration(rnd.IntN(400)-200) * time.Second) // never near the tolerance edge
		if rnd.IntN(4) == 0 {
			at = now.Add(time.Duration(rnd.IntN(3600)+400) * time.Second * time.Duration(1-2*rnd.IntN(2)))
		}
		h, b := []byte(Sign(secret, at, testBody)), append([]byte(nil), testBody...)
		switch rnd.IntN(3) {
		case 0:
			h[rnd.IntN(len(h))] = byte(32 + rnd.IntN(95))
		case 1:
			b[rnd.IntN(len(b))] ^= 1 << rnd.IntN(8)
		}
		add(secret, string(h), b)
	}
	in, _ := json.Marshal(cases)
	cmd := exec.Command(python, "-c", driver)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var got []bool
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("python printed %q (%v)", out, err)
	}
	accepted := 0
	for i, c := range cases {
		want := Verify(c.Secret, c.Header, c.raw, time.Now(), DefaultTolerance) == nil
		if got[i] != want {
			t.Errorf("case %d (header %q, body %.30q): Python says %v, Verify %v", i, c.Header, c.raw, got[i], want)
		}
		if got[i] {
			accepted++
		}
	}
	if accepted < 10 || accepted > len(cases)-10 {
		t.Fatalf("Python accepted %d of %d: the cases do not exercise both answers", accepted, len(cases))
	}
}

// TestDocs_GoExample: the docs' Go receiver is, line for line, the body of ExampleReadWebhook,
// which go vet and go test compile.
func TestDocs_GoExample(t *testing.T) {
	src, err := os.ReadFile("../client/webhook_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "func ExampleReadWebhook() {\n")
	if i < 0 {
		t.Fatal("client/webhook_example_test.go has no ExampleReadWebhook")
	}
	body := s[i+len("func ExampleReadWebhook() {\n"):]
	body = body[:strings.Index(body, "\n}\n")+1]
	if doc := docBlock(t, "go"); doc != body {
		t.Fatalf("docs/webhooks.md's Go block differs from ExampleReadWebhook's body:\n--- docs\n%s--- example\n%s", doc, body)
	}
}

// fmtDur writes a duration as the docs' table does: 1m, 1h4m, 3h, 1m30s.
func fmtDur(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// TestDocs_RetrySchedule: the docs' retry table, counts and constants are Backoff's.
func TestDocs_RetrySchedule(t *testing.T) {
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	lo := func() float64 { return 0 }
	hi := func() float64 { return math.Nextafter(1, 0) }
	var a, z time.Duration
	for n := 1; n <= 11; n++ {
		a += Backoff(n, lo)
		z += Backoff(n, hi)
		row := fmt.Sprintf("| %d | %s - %s | %s - %s |", n+1, fmtDur(Backoff(n, lo)), fmtDur(Backoff(n, hi)), fmtDur(a), fmtDur(z))
		if n == 11 {
			row = fmt.Sprintf("| 12 and later | %s - %s | %s - %s, then", fmtDur(Backoff(n, lo)), fmtDur(Backoff(n, hi)), fmtDur(a), fmtDur(z))
		}
		if !strings.Contains(doc, row) {
			t.Errorf("docs/webhooks.md lacks the row %q", row)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("attempted %d to %d times", len(Schedule(hi)), len(Schedule(lo))),
		fmt.Sprintf("between %d and %d hours", int((RetryFor - BackoffCap).Hours()), int(RetryFor.Hours())),
		fmt.Sprintf("**%d hours**", int(RetryFor.Hours())),
		fmt.Sprintf("**%d days**", int(DisableAfter.Hours()/24)),
		fmt.Sprintf("**%d s** timeout", int(DefaultTimeout.Seconds())),
		fmt.Sprintf("**%d minutes**", int(DefaultTolerance.Minutes())),
		fmt.Sprintf("%d KiB", maxResponse>>10),
		"`" + UserAgent + "`",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/webhooks.md does not say %q", want)
		}
	}
}

// TestDocs_Destinations: every range the docs list is refused, and every range the guard
// refuses is listed.
func TestDocs_Destinations(t *testing.T) {
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	sec := doc[strings.Index(doc, "## Destinations"):]
	sec = sec[:strings.Index(sec, "\n## ")]
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([0-9a-f:.]+/[0-9]+)`").FindAllStringSubmatch(sec, -1) {
		p, err := netip.ParsePrefix(m[1])
		if err != nil {
			// "10/8" style shorthand: complete the IPv4 address.
			parts := strings.SplitN(m[1], "/", 2)
			for strings.Count(parts[0], ".") < 3 {
				parts[0] += ".0"
			}
			if p, err = netip.ParsePrefix(parts[0] + "/" + parts[1]); err != nil {
				t.Errorf("cannot parse %q", m[1])
				continue
			}
		}
		listed[p.Masked().String()] = true
		for _, a := range []netip.Addr{p.Addr(), lastAddr(p)} {
			if Forbidden(a) == "" {
				t.Errorf("docs list %s, but %s in it is allowed", m[1], a)
			}
		}
	}
	for _, p := range append(forbiddenPrefixes, nat64, sixToFour) {
		if p.String() != "::/96" && !listed[p.String()] {
			t.Errorf("the guard refuses %s, which docs/webhooks.md does not list", p)
		}
	}
	if len(listed) < 15 {
		t.Fatalf("found only %d ranges in the docs", len(listed))
	}
}

// lastAddr returns the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
