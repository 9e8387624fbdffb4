package webhook

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lookTool returns the path of an external program a test compares against; in CI a missing
// one fails the test, elsewhere it skips.
func lookTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not on PATH: %s", name, install)
	}
	t.Skipf("%s not on PATH (%s to run this test)", name, install)
	return ""
}

// TestSign_OpenSSL checks Sign against an independent HMAC-SHA256: openssl dgst over the
// same "t.body" bytes, for bodies with newlines, NULs and non-ASCII text.
func TestSign_OpenSSL(t *testing.T) {
	openssl := lookTool(t, "openssl", "apt-get install -y openssl")
	for _, body := range [][]byte{
		testBody,
		[]byte("{}"),
		[]byte("{\"a\":\"line\\nbreak\"}\n\n"),
		[]byte("bytes \x00\x01\xff and é ünïcode"),
		bytes.Repeat([]byte("0123456789"), 10000),
	} {
		for _, secret := range []string{testSecret, "whsec_" + strings.Repeat("A", 43), "s3cr3t with spaces"} {
			now := time.Unix(1795000123, 0)
			cmd := exec.Command(openssl, "dgst", "-sha256", "-hmac", secret)
			cmd.Stdin = bytes.NewReader(append([]byte(strconv.FormatInt(now.Unix(), 10)+"."), body...))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("openssl: %v", err)
			}
			// "SHA2-256(stdin)= <hex>" (older versions: "(stdin)= <hex>")
			f := strings.Fields(string(out))
			if len(f) == 0 {
				t.Fatalf("openssl printed %q", out)
			}
			want := "t=1795000123,v1=" + f[len(f)-1]
			if got := Sign(secret, now, body); got != want {
				t.Fatalf("Sign = %q, openssl says %q (body %.20q)", got, want, body)
			}
		}
	}
}
