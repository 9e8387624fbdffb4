package pgstore

import (
	"strings"
	"testing"
)

// Every column of an event's job snapshot is read from (c.j), including those jobCols wraps in
// coalesce(...); a bare name would be ambiguous or, beside a literal, a syntax error.
func TestEventCols_EveryColumnFromTheSnapshot(t *testing.T) {
	jobPart := strings.TrimSuffix(eventCols, ", e.seq, e.id, e.type, e.account_id, e.job_id, e.created_at")
	for _, col := range []string{"(c.j).id,", "(c.j).seq,", "coalesce((c.j).input_sha256, '')", "coalesce((c.j).output_object, '')", "(c.j).output_cached,", "(c.j).output_verified,"} {
		if !strings.Contains(jobPart, col) {
			t.Errorf("eventCols lacks %q:\n%s", col, eventCols)
		}
	}
	if strings.Contains(jobPart, "(c.j).coalesce") || strings.Contains(jobPart, "(c.j).'") {
		t.Errorf("eventCols prefixes a function or a literal:\n%s", eventCols)
	}
}
