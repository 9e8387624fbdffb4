// Package testtime holds the one test-wide factor for the bounds tests wait within, so a slow
// or busy machine can be given more time without editing tests (issue 24). It imports nothing
// of convsvc, so every package's own tests can use it without an import cycle.
package testtime

import (
	"os"
	"strconv"
	"time"
)

// ScaleEnv names the environment variable that multiplies every bound passed through Scale,
// e.g. CONVSVC_TEST_TIMEOUT_SCALE=3 on a very slow machine. Unset, empty or invalid means 1.
const ScaleEnv = "CONVSVC_TEST_TIMEOUT_SCALE"

var factor = parse(os.Getenv(ScaleEnv))

func parse(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 1
	}
	return f
}

// Scale is d times the test-wide factor. Use it for how long a test waits for something that
// must happen (an upper bound that only a slow machine reaches), never for how long a test
// sleeps or waits to see that something does not happen.
func Scale(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }
