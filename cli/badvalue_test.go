package cli_test

import (
	"os"
	"testing"
)

// TestBadValue_EnvironmentAsFlag: a value a flag cannot hold gets one message whether it came
// from the command line or from the flag's CONVSVC_* twin, and a number out of the flag's range
// gets the flag's range message either way.
func TestBadValue_EnvironmentAsFlag(t *testing.T) {
	cases := []struct{ flag, env, value, want string }{
		{"workers", "CONVSVC_WORKERS", "abc", `--workers (CONVSVC_WORKERS) is "abc": not a whole number`},
		{"workers", "CONVSVC_WORKERS", "99999999999999999999", `--workers (CONVSVC_WORKERS) is "99999999999999999999": out of range for a whole number`},
		{"workers", "CONVSVC_WORKERS", "2000", `--workers (CONVSVC_WORKERS) is 2000: use 0 (one per CPU) or 1 to 1024`},
		{"max-attempts", "CONVSVC_MAX_ATTEMPTS", "1.5", `--max-attempts (CONVSVC_MAX_ATTEMPTS) is "1.5": not a whole number`},
		{"cache-hit-cents", "CONVSVC_CACHE_HIT_CENTS", "-1", `--cache-hit-cents (CONVSVC_CACHE_HIT_CENTS) is -1: use 0 to 1000000000000000`},
	}
	data := t.TempDir()
	for _, tc := range cases {
		_, flagErr := run(t, "config", "--data", data, "--"+tc.flag, tc.value)
		os.Setenv(tc.env, tc.value)
		_, envErr := run(t, "config", "--data", data)
		os.Unsetenv(tc.env)
		if flagErr == nil || envErr == nil || flagErr.Error() != tc.want || envErr.Error() != tc.want {
			t.Errorf("%s=%q: flag says %v, environment says %v; want both %q", tc.flag, tc.value, flagErr, envErr, tc.want)
		}
	}
}
