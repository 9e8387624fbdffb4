// Package e2e holds the fault and abuse tests that run the real convsvc binary (built with the
// poison converters) and kill, starve and attack it.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testproc"
	"github.com/convsvc/convsvc/store"
)

var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if raceEnabled && testing.Short() {
		// Every test here drives convsvc in child processes, which testproc builds without
		// -race: the detector would watch only this process's HTTP clients and waiting
		// (docs/reliability.md, "CI's time budget"). The plain step runs them all; the server
		// code the children run is raced in-process by service's, worker's and httpapi's tests.
		fmt.Println("e2e: skipped under -race -short (the servers under test are child processes built without -race; the plain go test ./... runs these tests)")
		os.Exit(0)
	}
	bin, cleanup := testproc.BuildForTests("poison")
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// submit reserves, uploads and starts a job; it returns the job id.
func submit(ctx context.Context, c *client.Client, from, to string, data []byte) (string, error) {
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: from, TargetFormat: to, InputBytes: int64(len(data))}, "")
	if err != nil {
		return "", err
	}
	if err := c.Upload(ctx, res.UploadURL, strings.NewReader(string(data)), int64(len(data))); err != nil {
		return res.Job.ID, err
	}
	_, err = c.StartJob(ctx, res.Job.ID)
	return res.Job.ID, err
}

// mustSubmit is submit that fails the test on error.
func mustSubmit(t *testing.T, c *client.Client, from, to string, data []byte) string {
	t.Helper()
	id, err := submit(context.Background(), c, from, to, data)
	if err != nil {
		t.Fatalf("submit %s->%s: %v", from, to, err)
	}
	return id
}

// waitStatus polls until the job has the status (or any final status when want is "").
func waitStatus(t *testing.T, c *client.Client, id, want string) client.Job {
	t.Helper()
	deadline := time.Now().Add(testenv.Scale(60 * time.Second))
	for {
		j, err := c.GetJob(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(j.Status) == want || (want == "" && j.Finished()) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s stayed %s, want %s", id, j.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkStopped opens a stopped server's data dir and checks everything that must hold after any
// crash: bbolt integrity, the ledger, legal states, no blob file without a job, no succeeded job
// without its output. With graceful set, no job may be left running either.
func checkStopped(t *testing.T, data string, graceful bool) (jobs []store.Job) {
	t.Helper()
	st, err := testenv.OpenStore(data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("bbolt check: %v", err)
	}
	if err := st.VerifyLedger(); err != nil {
		t.Fatalf("ledger: %v", err)
	}
	accts, err := st.Accounts()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]store.Job{}
	for _, a := range accts {
		after := ""
		for {
			page, more, err := st.ListJobs(a.ID, store.ListParams{Limit: 100, StartingAfter: after})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range page {
				ids[j.ID] = j
				jobs = append(jobs, j)
			}
			if !more {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	// Opened after the server is gone, as the next start would: its output files and their
	// metadata (an extended attribute, or a sidecar) must agree with the job records.
	blobs, err := blobstore.Open(blobstore.Config{Dir: filepath.Join(data, "blobs"), PublicURL: "http://127.0.0.1:1/"})
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]bool{}
	for _, j := range jobs {
		if graceful && j.Status == store.StatusRunning {
			t.Errorf("job %s running after a graceful stop", j.ID)
		}
		if j.Status == store.StatusSucceeded {
			// A job answered from the conversion cache reads another job's output (its object).
			objects[j.ObjectID()] = true
			out, _, err := blobs.OutputInfo(j.ObjectID())
			if err != nil || j.Output == nil || out.Bytes != j.Output.Bytes || out.SHA256 != j.Output.SHA256 {
				t.Errorf("succeeded job %s (output %+v) lacks its output: %+v, %v", j.ID, j.Output, out, err)
			}
		}
	}
	for _, dir := range []string{"uploads", "inputs", "outputs"} {
		entries, _ := os.ReadDir(filepath.Join(data, "blobs", dir))
		for _, e := range entries {
			id := strings.TrimSuffix(e.Name(), ".meta")
			if _, ok := ids[id]; !ok && !(dir == "outputs" && objects[id]) {
				t.Errorf("blob %s/%s has no job", dir, e.Name())
			}
		}
	}
	return jobs
}
