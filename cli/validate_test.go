package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/cli"
)

// TestCLI_RefusesNonsenseConfiguration: serve and convsvc config refuse, with the same
// validation, every value outside its flag's range, naming the flag and the range; nothing
// is replaced by a default in silence (--retention 0s used to become 24h). Every case also
// gives --listen a port that cannot be bound, so if a value were not refused, serve would
// fail at the listener, not start.
func TestCLI_RefusesNonsenseConfiguration(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  [2]string
		want []string // all must be in the error
	}{
		{"negative workers", []string{"--workers", "-3"}, [2]string{}, []string{"--workers", "-3", "0 (one per CPU) or 1 to 1024"}},
		{"too many workers", []string{"--workers", "100000"}, [2]string{}, []string{"--workers", "1 to 1024"}},
		{"negative drain timeout", []string{"--drain-timeout", "-5s"}, [2]string{}, []string{"--drain-timeout", "-5s", "above 0"}},
		{"zero drain timeout", []string{"--drain-timeout", "0s"}, [2]string{}, []string{"--drain-timeout", "above 0"}},
		{"zero conversion timeout", []string{"--conversion-timeout", "0"}, [2]string{}, []string{"--conversion-timeout", "above 0"}},
		{"huge conversion timeout", []string{"--conversion-timeout", "1000h"}, [2]string{}, []string{"--conversion-timeout", "at most 24h"}},
		{"lease below a second", []string{"--lease", "999ms"}, [2]string{}, []string{"--lease", "999ms", "1s to 24h"}},
		{"zero lease", []string{"--lease", "0s"}, [2]string{}, []string{"--lease", "1s to 24h"}},
		{"webhook secret overlap below a minute", []string{"--webhook-secret-overlap", "30s"}, [2]string{}, []string{"--webhook-secret-overlap", "1m to 720h"}},
		{"webhook secret overlap from the environment", nil, [2]string{"CONVSVC_WEBHOOK_SECRET_OVERLAP", "721h"}, []string{"--webhook-secret-overlap (CONVSVC_WEBHOOK_SECRET_OVERLAP)", "1m to 720h"}},
		{"lease from the environment", nil, [2]string{"CONVSVC_LEASE", "25h"}, []string{"--lease (CONVSVC_LEASE)", "1s to 24h"}},
		{"zero max attempts", []string{"--max-attempts", "0"}, [2]string{}, []string{"--max-attempts", "1 to 1000"}},
		{"NaN memory", []string{"--max-conversion-memory", "NaN"}, [2]string{}, []string{"--max-conversion-memory", "not a size"}},
		{"Inf memory", []string{"--max-conversion-memory", "Inf"}, [2]string{}, []string{"--max-conversion-memory", "not a size"}},
		{"hex memory", []string{"--max-conversion-memory", "0x1p30"}, [2]string{}, []string{"--max-conversion-memory", "not a size"}},
		{"tiny memory", []string{"--max-conversion-memory", "1KiB"}, [2]string{}, []string{"--max-conversion-memory", "at least 16MiB"}},
		{"negative heap floor", []string{"--gc-heap-floor", "-1"}, [2]string{}, []string{"--gc-heap-floor", "not a size"}},
		{"zero retention", []string{"--retention", "0s"}, [2]string{}, []string{"--retention", "above 0"}},
		{"zero storage progress timeout", []string{"--storage-progress-timeout", "0s"}, [2]string{}, []string{"--storage-progress-timeout", "above 0"}},
		{"connections below -1", []string{"--max-connections", "-5"}, [2]string{}, []string{"--max-connections", "-1 (no cap)"}},
		{"per-address connections below -1", []string{"--max-connections-per-address", "-2"}, [2]string{}, []string{"--max-connections-per-address", "1 to"}},
		{"negative retention", []string{"--retention", "-1h"}, [2]string{}, []string{"--retention", "above 0"}},
		{"zero pixels", []string{"--max-pixels", "0"}, [2]string{}, []string{"--max-pixels", "1 to"}},
		{"zero spend cap", []string{"--default-spend-cap-cents", "0"}, [2]string{}, []string{"--default-spend-cap-cents", "1 to"}},
		{"negative spend cap", []string{"--default-spend-cap-cents", "-5"}, [2]string{}, []string{"--default-spend-cap-cents", "1 to"}},
		{"listen without port", []string{"--blob-listen", "localhost"}, [2]string{}, []string{"--blob-listen", "HOST:PORT"}},
		{"port out of range", []string{"--blob-listen", "127.0.0.1:70000"}, [2]string{}, []string{"--blob-listen", "0 to 65535"}},
		{"same address twice", []string{"--blob-listen", "127.0.0.1:65536"}, [2]string{}, []string{"--listen", "--blob-listen"}},
		{"metrics port", []string{"--metrics-listen", ":http-alt"}, [2]string{}, []string{"--metrics-listen", "0 to 65535"}},
		{"public URL scheme", []string{"--public-url", "ftp://example.com"}, [2]string{}, []string{"--public-url", "http(s)"}},
		{"blob URL with query", []string{"--blob-public-url", "http://example.com/?a=1"}, [2]string{}, []string{"--blob-public-url", "without query"}},
		{"CORS wildcard in a host", []string{"--cors-origins", "https://*.example.com"}, [2]string{}, []string{"--cors-origins", "https://*.example.com", "* alone", "scheme://host[:port]"}},
		{"CORS path", []string{"--cors-origins", "https://app.example.com/upload"}, [2]string{}, []string{"--cors-origins", "no path"}},
		{"CORS trailing slash", []string{"--cors-origins", "https://app.example.com/"}, [2]string{}, []string{"--cors-origins", "no trailing slash"}},
		{"CORS javascript", []string{"--cors-origins", "javascript:alert(1)"}, [2]string{}, []string{"--cors-origins", "http or https"}},
		{"CORS user info", []string{"--cors-origins", "https://me@app.example.com"}, [2]string{}, []string{"--cors-origins", "no user information"}},
		{"CORS query", []string{"--cors-origins", "https://app.example.com?x=1"}, [2]string{}, []string{"--cors-origins", "no query"}},
		{"CORS upper case", []string{"--cors-origins", "https://App.example.com"}, [2]string{}, []string{"--cors-origins", "lower case: https://app.example.com"}},
		{"CORS default port", []string{"--cors-origins", "https://app.example.com:443"}, [2]string{}, []string{"--cors-origins", "default port out: https://app.example.com"}},
		{"CORS from the environment", nil, [2]string{"CONVSVC_CORS_ORIGINS", "https://ok.example.com,http://bad.example.com/x"}, []string{"--cors-origins (CONVSVC_CORS_ORIGINS)", "http://bad.example.com/x", "no path"}},
		{"bad CIDR", []string{"--trusted-proxies", "10.0.0.0/33"}, [2]string{}, []string{"--trusted-proxies", "10.0.0.0/33", "CIDR"}},
		{"not an address", []string{"--trusted-proxies", "10.0.0.0/8,proxy.local"}, [2]string{}, []string{"--trusted-proxies", "proxy.local"}},
		{"database URL", []string{"--database", "postgres://convsvc:s3cret@%zz/db"}, [2]string{}, []string{"--database", "not a valid postgres:// URL"}},
		{"log format", []string{"--log-format", "xml"}, [2]string{}, []string{"--log-format", "text or json"}},
		{"NaN output ratio", []string{"--max-output-ratio", "NaN"}, [2]string{}, []string{"--max-output-ratio", "2 to 1000000"}},
		{"output ratio below 2", []string{"--max-output-ratio", "0"}, [2]string{}, []string{"--max-output-ratio", "2 to 1000000"}},
		{"tiny output limit", []string{"--max-output-bytes", "1KiB"}, [2]string{}, []string{"--max-output-bytes", "at least 1MiB"}},
		{"output ratio from the environment", nil, [2]string{"CONVSVC_MAX_OUTPUT_RATIO", "-1"}, []string{"--max-output-ratio (CONVSVC_MAX_OUTPUT_RATIO)", "2 to 1000000"}},
		{"from the environment", nil, [2]string{"CONVSVC_WORKERS", "-3"}, []string{"--workers (CONVSVC_WORKERS)", "0 (one per CPU)"}},
		{"retention from the environment", nil, [2]string{"CONVSVC_RETENTION", "0s"}, []string{"--retention (CONVSVC_RETENTION)", "above 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env[0] != "" {
				t.Setenv(tt.env[0], tt.env[1])
			}
			for _, cmd := range []string{"config", "serve"} {
				args := append([]string{cmd, "--data", t.TempDir(), "--listen", "127.0.0.1:65536"}, tt.args...)
				_, err := run(t, args...)
				if err == nil {
					t.Fatalf("%s accepted %v", cmd, tt.args)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("%s %v: error %q shows the database password", cmd, tt.args, err)
				}
				for _, want := range tt.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s %v: error %q does not say %q", cmd, tt.args, err, want)
					}
				}
			}
		})
	}
}

// TestCLI_ConfigAcceptsSaneConfiguration: the defaults and the edges of each range pass, and
// config shows --trusted-proxies as given.
func TestCLI_ConfigAcceptsSaneConfiguration(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--workers", "0"},
		{"--workers", "1024", "--max-attempts", "1", "--retention", "1s", "--drain-timeout", "1ms"},
		{"--max-conversion-memory", "0"},
		{"--lease", "1s"},
		{"--lease", "24h"},
		{"--webhook-secret-overlap", "1m"},
		{"--webhook-secret-overlap", "720h"},
		{"--max-output-ratio", "2", "--max-output-bytes", "1MiB"},
		{"--max-output-ratio", "1000000", "--max-output-bytes", "1TiB"},
		{"--max-conversion-memory", "16MiB", "--gc-heap-floor", "0"},
		{"--listen", ":0", "--blob-listen", ":0"},
		{"--listen", "[::1]:8080", "--blob-listen", "localhost:8081", "--metrics-listen", "127.0.0.1:9090"},
		{"--public-url", "https://convert.example.com/", "--blob-public-url", "https://files.example.com/base"},
		{"--cors-origins", "https://app.example.com,http://127.0.0.1:8080, http://[::1]:8080,*"},
	} {
		if _, err := run(t, append([]string{"config", "--data", t.TempDir()}, args...)...); err != nil {
			t.Errorf("config %v: %v", args, err)
		}
	}
	out, err := run(t, "config", "--data", t.TempDir(), "--trusted-proxies", "10.0.0.0/8, 192.0.2.7,::ffff:172.16.0.0/108")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "10.0.0.0/8") || !strings.Contains(out, "192.0.2.7") {
		t.Errorf("config does not show the proxies:\n%s", out)
	}
}

// TestCLI_ConvertRefusesNonsenseFlags: convert --parallel -3 used to run one at a time and
// --timeout 0 to time every file out at once; both are refused before anything starts.
func TestCLI_ConvertRefusesNonsenseFlags(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--parallel", "-3"}, []string{"--parallel", "1 to 256"}},
		{[]string{"--parallel", "0"}, []string{"--parallel", "1 to 256"}},
		{[]string{"--timeout", "0s"}, []string{"--timeout", "above 0"}},
		{[]string{"--timeout", "-1m"}, []string{"--timeout", "above 0"}},
	} {
		_, err := run(t, append([]string{"convert", "nothing-here.png", "--to", "jpeg", "--server", "http://127.0.0.1:1", "--key", "cs_live_x"}, tc.args...)...)
		if err == nil {
			t.Fatalf("convert %v: no error", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("convert %v: %q does not say %q", tc.args, err, w)
			}
		}
	}
}

// TestCLI_WarnsOfAnUnspecifiedPublicAddress: --listen 0.0.0.0:8080 (or [::]:8080, or :8080)
// without --public-url would make http://0.0.0.0:8080 the page's CORS origin, and
// --blob-listen without --blob-public-url the host of every signed URL; config (and serve,
// in its log) warns, naming the flag that fixes it, and shows the origins used instead. With
// the public URLs set, or on loopback, there is no warning.
func TestCLI_WarnsOfAnUnspecifiedPublicAddress(t *testing.T) {
	config := func(args ...string) (string, string) {
		t.Helper()
		cmd := cli.NewRootCommand()
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"config", "--data", t.TempDir()}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("config %v: %v", args, err)
		}
		return out.String(), errOut.String()
	}
	for _, listen := range []string{"0.0.0.0:8080", "[::]:8080", ":8080"} {
		out, errOut := config("--listen", listen, "--blob-listen", "0.0.0.0:8081")
		for _, want := range []string{
			"warning: --listen " + listen + " is every address and no --public-url (CONVSVC_PUBLIC_URL)",
			"only when it is opened at http://127.0.0.1, http://localhost or http://[::1] on that port",
			"warning: --blob-listen 0.0.0.0:8081 is every address and no --blob-public-url (CONVSVC_BLOB_PUBLIC_URL)",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("--listen %s: stderr %q lacks %q", listen, errOut, want)
			}
		}
		if !strings.Contains(out, "(http://127.0.0.1, http://localhost and http://[::1] on --listen's port") {
			t.Errorf("--listen %s: config shows the CORS origins as\n%s", listen, out)
		}
	}
	for _, args := range [][]string{
		nil,
		{"--listen", "0.0.0.0:8080", "--public-url", "https://convert.example.com", "--blob-listen", "0.0.0.0:8081", "--blob-public-url", "https://files.example.com"},
		{"--listen", "192.0.2.7:8080", "--blob-listen", "[::1]:8081"},
	} {
		if _, errOut := config(args...); errOut != "" {
			t.Errorf("config %v warns: %q", args, errOut)
		}
	}
}
