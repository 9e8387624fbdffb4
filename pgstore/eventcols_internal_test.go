package pgstore

import (
	"strings"
	"testing"
)

// Every column of an event's job snapshot is read from r, including those jobCols wraps in
// coalesce(...); a bare name would be ambiguous or, beside a literal, a syntax error.
func TestEventCols_EveryColumnFromTheSnapshot(t *testing.T) {
	jobPart := strings.TrimSuffix(eventCols, ", e.seq, e.id, e.type, e.account_id, e.job_id, e.created_at")
	for _, col := range []string{"r.id,", "r.seq,", "coalesce(r.input_sha256, '')", "coalesce(r.output_object, '')", "r.output_cached,", "r.output_verified,"} {
		if !strings.Contains(jobPart, col) {
			t.Errorf("eventCols lacks %q:\n%s", col, eventCols)
		}
	}
	if strings.Contains(jobPart, "r.coalesce") || strings.Contains(jobPart, "r.'") {
		t.Errorf("eventCols prefixes a function or a literal:\n%s", eventCols)
	}
}
