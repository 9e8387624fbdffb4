package service_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// TestDeadJobs_TakeNoUploadsAndKeepNoInput (issue 18, item 6): after cancel, success,
// failure or a size mismatch, the job's upload URL is refused and nothing is stored; the
// input of a finished job is removed right after the transition commits (the store's
// FinishHook queues it for the input cleaner; the next sweep after a crash), and the output
// of a succeeded job stays until retention.
func TestDeadJobs_TakeNoUploadsAndKeepNoInput(t *testing.T) {
	// It reads the local blob store's files; on S3 the same paths are
	// TestInputCleanup_FinishingPaths_PostgresS3 and TestS3_PutAfterStartChangesNothing.
	testenv.LocalBlobsOnly(t, "reads the local blob store's files")
	e := testenv.Start(t)
	png := testenv.NoisePNG(t, 32, 24)
	uploads := filepath.Join(e.Cfg.DataDir, "blobs", "uploads")
	gone := func(t *testing.T, id string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(uploads, id)); !os.IsNotExist(err) {
			t.Fatalf("uploads/%s: %v, want it removed", id, err)
		}
	}
	goneSoon := func(t *testing.T, id string) { t.Helper(); waitInputGone(t, localInputs(e), id, "finished job") }
	tmpEmpty := func(t *testing.T) {
		t.Helper()
		entries, _ := os.ReadDir(filepath.Join(e.Cfg.DataDir, "blobs", "tmp"))
		if len(entries) > 0 {
			t.Fatalf("tmp/ holds %d files", len(entries))
		}
	}

	t.Run("cancelled before upload", func(t *testing.T) {
		res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
		testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", e.Key, nil), 200, "")
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 409, "job_finished")
		gone(t, res.Job.ID)
		tmpEmpty(t)
	})
	t.Run("cancelled after upload", func(t *testing.T) {
		res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 200, "")
		testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", e.Key, nil), 200, "")
		goneSoon(t, res.Job.ID)
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 409, "job_finished")
		gone(t, res.Job.ID)
	})
	t.Run("succeeded", func(t *testing.T) {
		res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 200, "")
		testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
		j := e.WaitFinished(e.Key, res.Job.ID)
		if j.Status != "succeeded" || j.Output == nil {
			t.Fatalf("job %+v", j)
		}
		goneSoon(t, res.Job.ID)
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 409, "job_finished")
		e.Main.Sweep()
		r := e.Do("GET", j.Output.URL, "", nil)
		testenv.MustStatus(t, r, 200, "")
		if int64(len(r.Body)) != j.Output.Bytes {
			t.Fatalf("output is %d bytes, want %d", len(r.Body), j.Output.Bytes)
		}
	})
	t.Run("failed", func(t *testing.T) {
		junk := []byte("this is not a PNG at all")
		res := e.Create(e.Key, "png", "jpeg", int64(len(junk)))
		testenv.MustStatus(t, e.Upload(res.UploadURL, junk), 200, "")
		testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
		if j := e.WaitFinished(e.Key, res.Job.ID); j.Status != "failed" {
			t.Fatalf("job %+v", j)
		}
		goneSoon(t, res.Job.ID)
		testenv.MustStatus(t, e.Upload(res.UploadURL, junk), 409, "job_finished")
	})
	t.Run("size mismatch", func(t *testing.T) {
		// The local store refuses a wrong Content-Length, so the mismatch is a file of another
		// size in place (as S3 or an earlier version could leave it).
		res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
		if err := os.WriteFile(filepath.Join(uploads, res.Job.ID), png[:10], 0o600); err != nil {
			t.Fatal(err)
		}
		testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 400, "size_mismatch")
		goneSoon(t, res.Job.ID)
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 409, "job_finished")
		gone(t, res.Job.ID)
	})
	t.Run("left by a crash, swept", func(t *testing.T) {
		// A cancelled job whose input survived (a crash between the cancel and the removal):
		// the cleaner has removed it once, and the file is put back.
		res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 200, "")
		testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", e.Key, nil), 200, "")
		goneSoon(t, res.Job.ID)
		if err := os.WriteFile(filepath.Join(uploads, res.Job.ID), png, 0o600); err != nil {
			t.Fatal(err)
		}
		// A live job's upload is left alone.
		live := e.Create(e.Key, "png", "jpeg", int64(len(png)))
		testenv.MustStatus(t, e.Upload(live.UploadURL, png), 200, "")
		e.Main.Sweep()
		gone(t, res.Job.ID)
		if _, err := os.Stat(filepath.Join(uploads, live.Job.ID)); err != nil {
			t.Fatalf("the live job's upload: %v", err)
		}
	})
	t.Run("no job's files, swept in batches", func(t *testing.T) {
		// More files of no job than the sweep checks in one store call (orphanBatch), around
		// a live job's upload.
		live := e.Create(e.Key, "png", "jpeg", int64(len(png)))
		testenv.MustStatus(t, e.Upload(live.UploadURL, png), 200, "")
		var orphans []string
		for len(orphans) < 1001 {
			id := store.NewJobID(time.Now())
			if err := os.WriteFile(filepath.Join(uploads, id), png[:10], 0o600); err != nil {
				t.Fatal(err)
			}
			orphans = append(orphans, id)
		}
		e.Main.Sweep()
		for _, id := range orphans {
			gone(t, id)
		}
		if _, err := os.Stat(filepath.Join(uploads, live.Job.ID)); err != nil {
			t.Fatalf("the live job's upload: %v", err)
		}
	})
}

// TestSweepTurn_ChecksFilesInTurns: the sweeper's periodic pass checks service.FilesPerTurn
// of the blob store's files (or a tenth of them), going on where the last pass stopped, so a
// store of many files costs each pass a bounded number of statements; each file still gets
// its turn, and a live job's files stay.
func TestSweepTurn_ChecksFilesInTurns(t *testing.T) {
	testenv.LocalBlobsOnly(t, "writes the local blob store's files")
	e := testenv.Start(t, noSweep)
	png := testenv.NoisePNG(t, 8, 8)
	uploads := filepath.Join(e.Cfg.DataDir, "blobs", "uploads")
	live := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(live.UploadURL, png), 200, "")
	listing := []string{live.Job.ID}
	for len(listing) < 2*service.FilesPerTurn+1001 {
		id := store.NewJobID(time.Now())
		if err := os.WriteFile(filepath.Join(uploads, id), png[:10], 0o600); err != nil {
			t.Fatal(err)
		}
		listing = append(listing, id)
	}
	slices.Sort(listing)
	stored := func() []string { return blobFiles(t, e, "uploads") }
	// After each turn the files of the listing up to its end are gone, but the live job's.
	for _, upTo := range []int{service.FilesPerTurn, 2 * service.FilesPerTurn, len(listing)} {
		e.Main.SweepTurn()
		want := slices.Clone(listing[upTo:])
		if i, _ := slices.BinarySearch(listing, live.Job.ID); i < upTo {
			want = append([]string{live.Job.ID}, want...)
		}
		if got := stored(); !slices.Equal(got, want) {
			t.Fatalf("after the turn up to %d: %d files stored, want %d", upTo, len(got), len(want))
		}
	}

	// The listing now fits in one turn: a finished job's input put back (a crash between its
	// cancel and the input cleaner) goes in the next pass, and the live upload stays.
	dead := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(dead.UploadURL, png), 200, "")
	testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+dead.Job.ID+"/cancel", e.Key, nil), 200, "")
	waitInputGone(t, localInputs(e), dead.Job.ID, "cancel") // the input cleaner's removal, before the crash's copy
	if err := os.WriteFile(filepath.Join(uploads, dead.Job.ID), png, 0o600); err != nil {
		t.Fatal(err)
	}
	e.Main.SweepTurn()
	if got := stored(); !slices.Equal(got, []string{live.Job.ID}) {
		t.Fatalf("after a turn over the whole listing: %v stored, want only the live job's upload %s", got, live.Job.ID)
	}
}

// TestSweepTurn_S3: on S3 the periodic pass's turns list the bucket from their cursor
// (JobIDsAfter, InputIDsAfter through s3Objects): a turn removes an upload no job owns and a
// finished job's upload put back after its input cleaner ran (a late PUT), and keeps a live
// job's upload.
func TestSweepTurn_S3(t *testing.T) {
	e := testenv.Start(t, testenv.S3(t), noSweep)
	in := s3Inputs(e)
	png := testenv.NoisePNG(t, 8, 8)
	live := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(live.UploadURL, png), 200, "")
	dead := e.Create(e.Key, "png", "jpeg", int64(len(png)))
	testenv.MustStatus(t, e.Upload(dead.UploadURL, png), 200, "")
	testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+dead.Job.ID+"/cancel", e.Key, nil), 200, "")
	waitInputGone(t, in, dead.Job.ID, "cancel")
	in.put(t, dead.Job.ID, png)
	orphan := store.NewJobID(time.Now())
	in.put(t, orphan, png)
	e.Main.SweepTurn()
	if got, want := e.ObjectKeys(), []string{e.UploadKey(live.Job.ID)}; !slices.Equal(got, want) {
		t.Fatalf("after a turn the bucket holds %q; want only the live job's upload %q", got, want)
	}
}
