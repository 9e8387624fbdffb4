package webhook

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestEvent_Marshal(t *testing.T) {
	data, err := JobData(map[string]any{"id": "job_1", "status": "succeeded"})
	if err != nil {
		t.Fatal(err)
	}
	e := Event{
		ID:        "evt_0123",
		Type:      EventJobSucceeded,
		CreatedAt: time.Date(2026, 11, 25, 21, 0, 0, 123000000, time.FixedZone("CET", 3600)),
		Data:      data,
	}
	got, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"evt_0123","type":"job.succeeded","created_at":"2026-11-25T20:00:00.123Z","data":{"job":{"id":"job_1","status":"succeeded"}}}`
	if string(got) != want {
		t.Fatalf("Marshal =\n%s\nwant\n%s", got, want)
	}
	var back Event
	if err := json.Unmarshal(got, &back); err != nil || back.ID != e.ID || !back.CreatedAt.Equal(e.CreatedAt) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	for name, bad := range map[string]Event{
		"no id":          {Type: EventJobFailed, Data: data},
		"no type":        {ID: "evt_1", Data: data},
		"no data":        {ID: "evt_1", Type: EventJobFailed},
		"data not JSON":  {ID: "evt_1", Type: EventJobFailed, Data: json.RawMessage(`{"job":`)},
		"data an array":  {ID: "evt_1", Type: EventJobFailed, Data: json.RawMessage(`[1]`)},
		"data a literal": {ID: "evt_1", Type: EventJobFailed, Data: json.RawMessage(`null`)},
	} {
		if b, err := bad.Marshal(); err == nil {
			t.Errorf("%s: Marshal = %s, want an error", name, b)
		}
	}
}

func TestNewEventID(t *testing.T) {
	a, err := NewEventID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewEventID()
	if a == b || !strings.HasPrefix(a, "evt_") || len(a) != 4+32 {
		t.Fatalf("NewEventID = %q, %q", a, b)
	}
}
