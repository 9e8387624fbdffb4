package service_test

import (
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestOutputLimit_FailsConversion holds issue 18 item 4 through the service: with
// MaxOutputBytes set (--max-output-bytes), a job whose output passes it fails
// conversion_failed with a message naming the limit, and a job within it succeeds.
func TestOutputLimit_FailsConversion(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.MaxOutputBytes = 1 << 20 })
	j := e.Convert(e.Key, "json", "csv", overOneMiBCSV())
	if j.Status != "failed" || j.ErrorCode == nil || string(*j.ErrorCode) != "conversion_failed" || j.ErrorMessage == nil ||
		!strings.Contains(*j.ErrorMessage, "wrote more than 1 MiB, the output size limit") {
		t.Fatalf("job: %s", j.Error())
	}
	if j := e.Convert(e.Key, "json", "csv", []byte(`[{"a":1},{"b":2}]`)); j.Status != "succeeded" {
		t.Fatalf("small job: %s %s", j.Status, j.Error())
	}
}
