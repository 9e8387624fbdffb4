package cli

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/convsvc/convsvc/client"
)

// useBatches says whether the run goes through batches (POST /v1/batches and one archive per
// batch, a handful of requests for hundreds of files) rather than one job flow per file:
// with --zip, or with several files none of which goes to standard output.
func (o *convertOptions) useBatches(plans []*plan) bool {
	return o.zip != "" || (len(plans) > 1 && o.output != stdio)
}

// batchRun is the state of one run through batches: what it wrote and what failed.
type batchRun struct {
	o       *convertOptions
	c       *client.Client
	prog    *progress
	files   []*fileProgress
	report  func(i int, jobID, line string, warnings []client.Warning)
	zw      *zip.Writer // --zip: the archive being written
	mu      sync.Mutex
	errs    []error
	batches []client.Batch // the last answer for each batch, to cancel the unfinished ones
}

func (b *batchRun) fail(p *plan, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, fmt.Errorf("%s: %s", p.input, describe(err)))
}

// runBatches converts plans through batches of up to client.MaxBatchJobs. It returns the
// errors per file; on interruption the unfinished jobs are cancelled and cancelled counts them.
func (o *convertOptions) runBatches(ctx context.Context, c *client.Client, target client.Format, plans []*plan, b *batchRun) (cancelled int, err error) {
	var zipFile *os.File
	if o.zip != "" {
		if zipFile, err = os.CreateTemp(filepath.Dir(o.zip), "."+filepath.Base(o.zip)+".*.part"); err != nil {
			return 0, err
		}
		defer os.Remove(zipFile.Name())
		defer zipFile.Close()
		b.zw = zip.NewWriter(zipFile)
	}
	for start := 0; start < len(plans) && ctx.Err() == nil; start += client.MaxBatchJobs {
		end := min(start+client.MaxBatchJobs, len(plans))
		b.runOne(ctx, target, plans[start:end], start)
	}
	if ctx.Err() != nil {
		return b.cancelAll(ctx), nil
	}
	if b.zw != nil {
		err := b.zw.Close()
		if err == nil {
			err = zipFile.Sync()
		}
		if cerr := zipFile.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = placeFile(zipFile.Name(), o.zip, o.force)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", o.zip, err)
		}
	}
	return 0, errors.Join(b.errs...)
}

// runOne reserves, uploads, starts, waits for and unpacks one batch of plans; first is the
// index of plans[0] among all files.
func (b *batchRun) runOne(ctx context.Context, target client.Format, plans []*plan, first int) {
	o, c := b.o, b.c
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	reqs := make([]client.CreateJobRequest, len(plans))
	for i, p := range plans {
		reqs[i] = client.CreateJobRequest{InputFormat: p.from, TargetFormat: target.ID, InputBytes: p.size, Preset: o.preset, DeliverTo: o.deliver}
		if !o.opts.IsZero() {
			reqs[i].Options = &o.opts
		}
		b.prog.state(b.files[first+i], "reserving")
	}
	res, err := c.CreateBatch(ctx, reqs, randomToken())
	if err != nil {
		for i, p := range plans {
			b.prog.finish(b.files[first+i], "")
			b.fail(p, err)
		}
		return
	}
	b.mu.Lock()
	b.batches = append(b.batches, client.Batch{ID: res.ID})
	slot := len(b.batches) - 1
	b.mu.Unlock()
	// Uploads go to object storage, o.parallel at once; a file that cannot be uploaded is
	// cancelled, so that the batch can finish without it.
	sem := make(chan struct{}, max(1, o.parallel))
	var wg sync.WaitGroup
	for i, p := range plans {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fp := b.files[first+i]
			err := uploadFile(ctx, c, p, res.Jobs[i].UploadURL, func(done, total int64) { b.prog.transfer(fp, "upload", done, total) })
			if err != nil && ctx.Err() == nil {
				b.prog.finish(fp, "")
				b.fail(p, err)
				c.CancelJob(ctx, res.Jobs[i].Job.ID)
				return
			}
			b.prog.state(fp, "uploaded")
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	show := func(bt client.Batch) {
		b.setBatch(slot, bt)
		for i := range plans {
			b.prog.state(b.files[first+i], batchPhase(bt))
		}
	}
	batch, err := c.StartBatch(ctx, res.ID)
	if err == nil {
		show(batch)
		batch, err = c.WaitBatch(ctx, res.ID, show)
	}
	if err != nil {
		if ctx.Err() == nil {
			for _, p := range plans {
				b.fail(p, err)
			}
		}
		return
	}
	b.setBatch(slot, batch)
	if err := b.unpack(ctx, res, plans, first); err != nil && ctx.Err() == nil {
		for _, p := range plans {
			b.fail(p, err)
		}
	}
}

// batchPhase is a batch's progress as a file's phase: what its jobs wait for, and the counts.
func batchPhase(bt client.Batch) string {
	counts := fmt.Sprintf("batch: %d queued, %d running, %d done", bt.Counts.Queued, bt.Counts.Running,
		bt.Counts.Succeeded+bt.Counts.Failed+bt.Counts.Cancelled)
	switch {
	case bt.Counts.Queued > 0:
		return "queued (" + counts + ")"
	case bt.Counts.Running > 0:
		return "running (" + counts + ")"
	}
	return counts
}

func (b *batchRun) setBatch(slot int, bt client.Batch) {
	b.mu.Lock()
	b.batches[slot] = bt
	b.mu.Unlock()
}

// uploadFile PUTs one plan's file to its upload URL.
func uploadFile(ctx context.Context, c *client.Client, p *plan, url string, progress func(done, total int64)) error {
	f, err := os.Open(p.path)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.UploadWithProgress(ctx, url, f, p.size, progress)
}

// unpack downloads the batch's archive to a temporary file and writes each succeeded output
// where its plan says (or into --zip under its output's name), checking its SHA-256; an item
// that did not succeed is reported with its job's error.
func (b *batchRun) unpack(ctx context.Context, res client.BatchReservation, plans []*plan, first int) error {
	tmp, err := os.CreateTemp("", "convsvc-batch-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := b.c.DownloadBatchArchive(ctx, res.ID, tmp); err != nil {
		return err
	}
	st, err := tmp.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(tmp, st.Size())
	if err != nil {
		return fmt.Errorf("archive of %s: %w", res.ID, err)
	}
	entries := map[string]*zip.File{}
	for _, f := range zr.File {
		entries[f.Name] = f
	}
	var m client.BatchManifest
	if mf := entries["manifest.json"]; mf == nil {
		return fmt.Errorf("archive of %s has no manifest.json", res.ID)
	} else if err := readManifest(mf, &m); err != nil {
		return err
	}
	for _, it := range m.Items {
		if it.Index < 0 || it.Index >= len(plans) {
			continue
		}
		p, fp := plans[it.Index], b.files[first+it.Index]
		if it.Status != client.StatusSucceeded || it.File == nil || entries[*it.File] == nil {
			b.prog.finish(fp, "")
			msg := string(it.Status)
			if it.ErrorCode != nil {
				msg += ": " + *it.ErrorCode
			}
			if it.ErrorMessage != nil {
				msg += ": " + *it.ErrorMessage
			}
			b.fail(p, fmt.Errorf("job %s %s", it.JobID, msg))
			continue
		}
		if err := b.extract(entries[*it.File], p, it); err != nil {
			b.prog.finish(fp, "")
			b.fail(p, err)
			continue
		}
		b.report(first+it.Index, it.JobID, fmt.Sprintf("%s -> %s (%s, %s)", p.input, b.outName(p), plural(*it.Bytes, "byte", "bytes"), it.JobID), it.Warnings)
	}
	return nil
}

func (b *batchRun) outName(p *plan) string {
	if b.zw != nil {
		return b.o.zip + ":" + filepath.Base(p.out)
	}
	return p.out
}

// extract writes one archive entry to its plan's output (atomically, as download does) or into
// --zip, and checks its size and SHA-256 against the manifest.
func (b *batchRun) extract(f *zip.File, p *plan, it client.BatchManifestItem) error {
	if b.zw != nil {
		// Copied as stored, under the output's name; the CRC-32 travels with it.
		sum, err := entrySHA256(f)
		if err == nil && sum != *it.SHA256 {
			err = fmt.Errorf("output of %s has sha256 %s, the manifest says %s", it.JobID, sum, *it.SHA256)
		}
		if err != nil {
			return err
		}
		fh := f.FileHeader
		fh.Name = filepath.Base(p.out)
		b.mu.Lock()
		defer b.mu.Unlock()
		w, err := b.zw.CreateRaw(&fh)
		if err != nil {
			return err
		}
		raw, err := f.OpenRaw()
		if err != nil {
			return err
		}
		_, err = io.Copy(w, raw)
		return err
	}
	dir := filepath.Dir(p.out)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p.out)+".*.part")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	rc, err := f.Open()
	if err != nil {
		tmp.Close()
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), rc)
	rc.Close()
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != *it.Bytes || sum != *it.SHA256 {
		return fmt.Errorf("output of %s: got %d bytes with sha256 %s, want %d bytes with %s", it.JobID, n, sum, *it.Bytes, *it.SHA256)
	}
	return placeFile(tmp.Name(), p.out, b.o.force)
}

func entrySHA256(f *zip.File) (string, error) {
	rc, err := f.Open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func readManifest(f *zip.File, m *client.BatchManifest) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := json.NewDecoder(rc).Decode(m); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	return nil
}

// placeFile moves a finished temporary file to out: with force by rename (replacing what is
// there), else by hard link, which fails rather than replace a file that appeared meanwhile.
func placeFile(tmp, out string, force bool) error {
	if force {
		return os.Rename(tmp, out)
	}
	err := os.Link(tmp, out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s appeared while converting; it was left alone (pass --force to overwrite it)", out)
	default:
		// No hard links here (some network and FAT file systems): check, then rename.
		if _, serr := os.Lstat(out); serr == nil {
			return fmt.Errorf("%s appeared while converting; it was left alone (pass --force to overwrite it)", out)
		}
		return os.Rename(tmp, out)
	}
}

// cancelAll cancels the unfinished jobs of every batch of the run (after Ctrl-C) and returns
// how many it cancelled.
func (b *batchRun) cancelAll(ctx context.Context) int {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n := 0
	b.mu.Lock()
	batches := append([]client.Batch(nil), b.batches...)
	b.mu.Unlock()
	for _, bt := range batches {
		after, err := b.c.CancelBatch(cctx, bt.ID)
		if err == nil {
			n += after.Counts.Cancelled - bt.Counts.Cancelled
		}
	}
	return n
}
