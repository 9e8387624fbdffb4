package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenReadOnly_Dump: a read-only open of a database that no process holds dumps every
// account, key and job and leaves the file unchanged; while another handle holds the file it
// fails with ErrLocked.
func TestOpenReadOnly_Dump(t *testing.T) {
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := s.CreateAccount("a", 10)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := s.CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []Job
	for range 3 {
		job, _, err := s.CreateJob(CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1},
			func(Job) (Response, error) { return Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	if _, err := OpenReadOnly(path, Options{LockTimeout: 10 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only open while the file is held: %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ro.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if len(d.Accounts) != 1 || d.Accounts[0].ID != acct.ID || d.Accounts[0].ReservedCents != 3 {
		t.Errorf("accounts = %+v", d.Accounts)
	}
	if len(d.Keys) != 1 || d.Keys[0].ID != key.ID || string(d.Keys[0].Hash) != string(key.Hash) {
		t.Errorf("keys = %+v, want %+v", d.Keys, key)
	}
	if len(d.Jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(d.Jobs))
	}
	for i, j := range d.Jobs {
		if j.ID != jobs[i].ID || j.Status != StatusCreated {
			t.Errorf("job %d = %s %s, want %s created", i, j.ID, j.Status, jobs[i].ID)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the read-only open changed the file")
	}
}
