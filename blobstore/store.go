package blobstore

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"time"
)

// minSecretLen is the shortest HMAC key accepted, from Config or url.secret.
const minSecretLen = 16

// secretFile holds the generated URL-signing key, as 64 hex characters, inside Dir.
const secretFile = "url.secret"

// metaSuffix names the JSON sidecar of an output: outputs/{id}.meta.
const metaSuffix = ".meta"

// Extended attributes the store keeps on its files where the filesystem has user attributes
// (Linux): each is set before the file's one fsync, so the rename that publishes the file
// publishes it too.
const (
	// metaAttr carries an output's metadata (the sidecar's JSON) on the output file.
	metaAttr = "user.convsvc.output"
	// uploadAttr carries an upload's SHA-256 (64 lowercase hex digits), taken while its PUT
	// was received.
	uploadAttr = "user.convsvc.sha256"
)

// Config configures a Store.
type Config struct {
	Dir       string           // root dir; created 0700 with subdirs uploads/, inputs/, outputs/, tmp/
	PublicURL string           // base URL clients see, e.g. "http://127.0.0.1:8081" (trailing slash tolerated)
	Secret    []byte           // HMAC-SHA256 key (at least 16 bytes); when nil, loaded from Dir/url.secret, or generated there (0600) on first open
	Now       func() time.Time // default time.Now; tests inject
	Logger    *slog.Logger     // default slog.Default(); signatures are never logged
	// JobState asks the job store about the job an upload is for; only a JobOpen
	// job takes one (see Seal and the PUT handler). Seal needs it; a store that
	// only serves outputs can leave it nil.
	JobState func(jobID string) (JobState, error)
}

// JobState is what the job store says about the job an upload URL was issued for.
type JobState int

const (
	// JobOpen: the job was created and waits for its file; a PUT may land.
	JobOpen JobState = iota
	// JobStarted: the job started; its upload is its input and is sealed.
	JobStarted
	// JobFinished: the job succeeded, failed, was cancelled or expired; it takes no file.
	JobFinished
	// JobGone: no such job (never created, or deleted at expiry).
	JobGone
)

// Store keeps uploads, sealed inputs and outputs as files under one directory.
type Store struct {
	uploads, inputs, outputs, tmp string
	// legacyInputs is set when inputs/ held files at Open: sealed inputs of an earlier
	// version. Nothing writes there any more, so otherwise Seal and OpenInput skip the
	// lookup (a stat of a missing name in a large directory is microseconds of kernel time).
	legacyInputs bool

	publicURL string
	secret    []byte
	metaAttrs bool      // outputs' metadata in an extended attribute when the filesystem takes one (tests turn it off)
	macs      sync.Pool // HMAC-SHA256 with secret: hmac.New pads the key and hashes two blocks each time
	now       func() time.Time
	log       *slog.Logger
	jobState  func(jobID string) (JobState, error)

	mu       sync.Mutex
	locks    map[string]*idLock  // per-id commit locks, refcounted
	inflight map[string]struct{} // ids with a PUT streaming its body
}

type idLock struct {
	mu   sync.Mutex
	refs int
}

// Open creates (or reopens) the store under cfg.Dir, loading or generating the
// URL secret and removing temporary files a crash left behind.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("blobstore: Config.Dir is empty; set the data directory")
	}
	pub, err := url.Parse(strings.TrimRight(cfg.PublicURL, "/"))
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" || pub.RawQuery != "" || pub.Fragment != "" {
		return nil, fmt.Errorf("blobstore: public URL %q must be an absolute http(s) URL without query, like http://127.0.0.1:8081", cfg.PublicURL)
	}
	s := &Store{
		uploads:   filepath.Join(cfg.Dir, "uploads"),
		inputs:    filepath.Join(cfg.Dir, "inputs"),
		outputs:   filepath.Join(cfg.Dir, "outputs"),
		tmp:       filepath.Join(cfg.Dir, "tmp"),
		publicURL: pub.String(),
		now:       cfg.Now,
		log:       cfg.Logger,
		jobState:  cfg.JobState,
		metaAttrs: true,
		locks:     make(map[string]*idLock),
		inflight:  make(map[string]struct{}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	for _, d := range []string{cfg.Dir, s.uploads, s.inputs, s.outputs, s.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("%w: create %s: %w", ErrStorage, d, err)
		}
	}
	if err := s.removeStaleTemp(); err != nil {
		return nil, err
	}
	if s.legacyInputs, err = dirHasEntries(s.inputs); err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrStorage, s.inputs, err)
	}
	switch {
	case cfg.Secret != nil && len(cfg.Secret) < minSecretLen:
		return nil, fmt.Errorf("blobstore: URL secret is %d bytes; use at least %d random bytes", len(cfg.Secret), minSecretLen)
	case cfg.Secret != nil:
		s.secret = slices.Clone(cfg.Secret)
	default:
		if s.secret, err = s.loadSecret(filepath.Join(cfg.Dir, secretFile)); err != nil {
			return nil, err
		}
	}
	s.macs.New = func() any { return hmac.New(sha256.New, s.secret) }
	return s, nil
}

// removeStaleTemp empties tmp/: whatever is there was being written when the
// process stopped, and no caller will ever commit it.
func (s *Store) removeStaleTemp() error {
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return fmt.Errorf("%w: read %s: %w", ErrStorage, s.tmp, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.tmp, e.Name())); err != nil {
			return fmt.Errorf("%w: remove stale temporary file: %w", ErrStorage, err)
		}
	}
	if len(entries) > 0 {
		s.log.Info("blobstore: removed stale temporary files", "count", len(entries), "dir", s.tmp)
	}
	return nil
}

// loadSecret reads the URL secret from path, generating and atomically
// writing a new one (0600) when the file does not exist.
func (s *Store) loadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		rand.Read(key) // never fails (crypto/rand panics instead)
		b = []byte(hex.EncodeToString(key) + "\n")
		if err := s.writeFileAtomic(filepath.Dir(path), filepath.Base(path), b); err != nil {
			return nil, fmt.Errorf("blobstore: write URL secret: %w", err)
		}
		s.log.Info("blobstore: generated URL signing secret", "path", path)
	} else if err != nil {
		return nil, fmt.Errorf("%w: read URL secret: %w", ErrStorage, err)
	} else if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		s.log.Warn("blobstore: URL secret is readable by others; chmod 600 it", "path", path, "mode", fi.Mode().Perm().String())
	}
	key := bytes.TrimSpace(b)
	if len(key) < minSecretLen {
		return nil, fmt.Errorf("blobstore: URL secret in %s is %d bytes; delete the file to generate a new one, or write at least %d random bytes", path, len(key), minSecretLen)
	}
	return key, nil
}

// lockID serialises commits (rename into place, seal, delete) for one id.
func (s *Store) lockID(id string) (unlock func()) {
	s.mu.Lock()
	l := s.locks[id]
	if l == nil {
		l = &idLock{}
		s.locks[id] = l
	}
	l.refs++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, id)
		}
		s.mu.Unlock()
	}
}

// errNoJobState is Seal's answer when Config.JobState is not set: without it nothing would keep
// a later PUT from replacing the input of a started job.
var errNoJobState = errors.New("blobstore: Seal needs Config.JobState")

// Seal freezes the job's upload: it runs start with the upload's size while holding the id's
// lock, and start records the job as started in the job store. From then on no upload to the
// id can land, because a PUT commits under the same lock and is refused unless Config.JobState
// says the job is still open. The file stays where its PUT put it, uploads/{id}, already durable
// (the PUT fsynced it and the directory), so sealing touches no directory: the rename into
// inputs/ that earlier versions made was 13% of the API server's CPU at 64 clients starting
// jobs. An input sealed by such a version, inputs/{id}, wins.
//
// Seal returns ErrNotFound, without calling start, when nothing was uploaded, and otherwise
// start's error.
func (s *Store) Seal(jobID string, start func(size int64) error) error {
	if !validID(jobID) {
		return ErrInvalidID
	}
	if s.jobState == nil {
		return errNoJobState
	}
	defer trace.StartRegion(context.Background(), "blob.seal").End()
	unlock := s.lockID(jobID)
	defer unlock()
	fi, err := firstExisting(s.inputNames(jobID), os.Stat)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("seal %s: no upload: %w", jobID, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("%w: seal %s: %w", ErrStorage, jobID, err)
	}
	return start(fi.Size())
}

// inputNames are where a started job's input can be, in the order they win: inputs/{id} when
// an earlier version sealed inputs there (legacyInputs), then uploads/{id}.
func (s *Store) inputNames(jobID string) []string {
	if s.legacyInputs {
		return []string{filepath.Join(s.inputs, jobID), filepath.Join(s.uploads, jobID)}
	}
	return []string{filepath.Join(s.uploads, jobID)}
}

// firstExisting applies op to each name in turn and returns the first result that is not
// fs.ErrNotExist (or that error, when none exists).
func firstExisting[T any](names []string, op func(string) (T, error)) (v T, err error) {
	for _, name := range names {
		if v, err = op(name); !errors.Is(err, fs.ErrNotExist) {
			return v, err
		}
	}
	return v, err
}

// OpenInput opens the input of a started job for reading: inputs/{id} when an
// earlier version sealed it there, else uploads/{id} (Seal leaves it in place,
// and Config.JobState keeps a PUT from replacing it). ErrNotFound if neither exists.
func (s *Store) OpenInput(jobID string) (*os.File, error) {
	if !validID(jobID) {
		return nil, ErrInvalidID
	}
	f, err := firstExisting(s.inputNames(jobID), os.Open)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open input %s: %w", jobID, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("%w: open input %s: %w", ErrStorage, jobID, err)
	}
	return f, nil
}

// UploadSHA256 returns the lowercase hex SHA-256 of the job's upload (after Seal, its sealed
// input): the hash its PUT took while the body was received, kept with the file in an
// extended attribute; where the filesystem keeps none (or for an input an earlier version
// sealed) it is taken now by reading the file. It does not take the id's lock, so Seal's start
// may call it; ErrNotFound when nothing was uploaded.
func (s *Store) UploadSHA256(jobID string) (string, error) {
	if !validID(jobID) {
		return "", ErrInvalidID
	}
	// The hash its PUT recorded, read by name (no open and close: start runs this under
	// Seal's id lock, so the name is the file Seal saw); else the file is read.
	b, err := firstExisting(s.inputNames(jobID), func(name string) ([]byte, error) { return getPathAttr(name, uploadAttr) })
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("upload %s: %w", jobID, ErrNotFound)
	} else if err == nil && validSHA256(string(b)) {
		return string(b), nil
	}
	f, err := firstExisting(s.inputNames(jobID), os.Open)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("upload %s: %w", jobID, ErrNotFound)
	} else if err != nil {
		return "", fmt.Errorf("%w: upload %s: %w", ErrStorage, jobID, err)
	}
	defer f.Close()
	h := sha256.New()
	buf := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(buf)
	if _, err := io.CopyBuffer(h, f, *buf); err != nil {
		return "", fmt.Errorf("%w: upload %s: %w", ErrStorage, jobID, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validSHA256 reports whether s is 64 lowercase hex digits.
func validSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// OutputMeta describes how an output is served.
type OutputMeta struct {
	ContentType string // MIME type; application/octet-stream when empty
	Filename    string // suggested download name; none when empty
}

// Output identifies a stored output.
type Output struct {
	Bytes  int64  // size in bytes
	SHA256 string // lowercase hex of the content's SHA-256, also its ETag
}

// outputSidecar is an output's metadata, as JSON: in the output file's extended attribute
// metaAttr where the filesystem keeps user attributes (Linux), otherwise, and for outputs
// written before, in outputs/{id}.meta. Either marks a complete output: a file under outputs/
// with neither is one a crash cut short.
type outputSidecar struct {
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	ContentType string `json:"content_type,omitempty"`
	Filename    string `json:"filename,omitempty"`
}

// WriteOutput stores what write produces as the job's output, replacing any
// previous one; on any error (or panic) nothing of it is left behind.
func (s *Store) WriteOutput(jobID string, meta OutputMeta, write func(w io.Writer) error) (Output, error) {
	if err := checkOutputMeta(meta); err != nil {
		return Output{}, err
	}
	p, err := s.CreateOutput(jobID)
	if err != nil {
		return Output{}, err
	}
	defer p.Discard()
	if err := write(p.blob); err != nil {
		if p.blob.err != nil { // the disk, not the producer, failed
			return Output{}, fmt.Errorf("%w: write output %s: %w", ErrStorage, jobID, err)
		}
		return Output{}, fmt.Errorf("blobstore: write output %s: %w", jobID, err)
	}
	return p.Commit(meta)
}

// PendingOutput is a job's output being written to a temporary file: Commit makes it the
// job's output, Discard drops it. One goroutine writes it and then calls Commit or Discard
// (Discard after Commit does nothing). A converter writes straight into it, so the output is
// written once, not to scratch space first and then copied.
type PendingOutput struct {
	s     *Store
	jobID string
	blob  *tempBlob
}

// CreateOutput starts a job's output; nothing of it is visible until Commit.
func (s *Store) CreateOutput(jobID string) (*PendingOutput, error) {
	if !validID(jobID) {
		return nil, ErrInvalidID
	}
	blob, err := s.createTemp("out-" + jobID)
	if err != nil {
		return nil, fmt.Errorf("%w: write output %s: %w", ErrStorage, jobID, err)
	}
	return &PendingOutput{s: s, jobID: jobID, blob: blob}, nil
}

// errOutputHandedOut is Write's answer once File gave the output's file to another writer.
var errOutputHandedOut = errors.New("blobstore: the output's file was handed to another writer (File)")

// Write appends to the output; an error is the disk's.
func (p *PendingOutput) Write(b []byte) (int, error) {
	if p.blob.external {
		return 0, errOutputHandedOut
	}
	return p.blob.Write(b)
}

// ReadFrom appends r to the output; it returns r's error, or the disk's.
func (p *PendingOutput) ReadFrom(r io.Reader) (int64, error) {
	if p.blob.external {
		return 0, errOutputHandedOut
	}
	return p.blob.ReadFrom(r)
}

// File hands the output's own temporary file to a writer that needs a descriptor: a worker
// process writes the output straight into it, so the output is not written to scratch space
// first and copied. The file is empty and at offset 0; whatever it holds at Commit is the
// output, whose size is the file's and whose SHA-256 Commit takes by reading it back (from the
// page cache, with writeback already started). Nothing may be written through Write or
// ReadFrom before or after, and the writer must be done before Commit or Discard; the file
// stays the PendingOutput's (the caller does not close it).
func (p *PendingOutput) File() (*os.File, error) {
	if p.blob.n > 0 || p.blob.external {
		return nil, errors.New("blobstore: File on an output already written to")
	}
	p.blob.external = true
	return p.blob.f, nil
}

// Discard removes the output unless Commit stored it.
func (p *PendingOutput) Discard() { p.blob.discard() }

// Written writes what is buffered and returns the output's file to read back (the output
// check before Commit) and its size; the reader stays valid until Commit or Discard.
func (p *PendingOutput) Written() (io.ReaderAt, int64, error) {
	if p.blob.external {
		fi, err := p.blob.f.Stat()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: write output %s: %w", ErrStorage, p.jobID, err)
		}
		return p.blob.f, fi.Size(), nil
	}
	p.blob.flush()
	if p.blob.err != nil {
		return nil, 0, fmt.Errorf("%w: write output %s: %w", ErrStorage, p.jobID, p.blob.err)
	}
	return p.blob.f, p.blob.ondisk, nil
}

// Commit syncs the output and makes it the job's, replacing any previous one, with meta for
// its download. The metadata goes into the file's extended attribute before the one fsync, so
// the rename that follows publishes data and metadata at once; only where the filesystem has
// no user attributes is it a sidecar file (with its own create, fsync and rename: 40% of a
// small conversion's worker CPU, docs/benchmarks.md, table 5f).
func (p *PendingOutput) Commit(meta OutputMeta) (out Output, err error) {
	if err := checkOutputMeta(meta); err != nil {
		return Output{}, err
	}
	s, jobID, cw := p.s, p.jobID, p.blob
	region := trace.StartRegion(context.Background(), "blob.output.hash")
	if cw.external {
		err = cw.adopt()
	} else {
		err = cw.complete()
	}
	region.End()
	if err != nil {
		return Output{}, fmt.Errorf("%w: write output %s: %w", ErrStorage, jobID, err)
	}
	out = Output{Bytes: cw.n, SHA256: cw.sum()}
	side, err := json.Marshal(outputSidecar{Bytes: out.Bytes, SHA256: out.SHA256, ContentType: meta.ContentType, Filename: meta.Filename})
	if err != nil {
		return Output{}, fmt.Errorf("blobstore: encode output meta: %w", err)
	}
	inAttr := false
	if s.metaAttrs {
		switch err := setAttr(cw.f, metaAttr, side); {
		case err == nil:
			inAttr = true
		case !errors.Is(err, errNoMetaAttr):
			return Output{}, fmt.Errorf("%w: write output %s meta: %w", ErrStorage, jobID, err)
		}
	}
	region = trace.StartRegion(context.Background(), "blob.output.sync")
	err = cw.syncClose()
	region.End()
	if err != nil {
		return Output{}, fmt.Errorf("%w: write output %s: %w", ErrStorage, jobID, err)
	}

	defer trace.StartRegion(context.Background(), "blob.output.publish").End()
	unlock := s.lockID(jobID)
	defer unlock()
	data := filepath.Join(s.outputs, jobID)
	// A sidecar is the commit marker: drop the old one before the data it describes
	// changes, write the new one last. An attribute travels with the data.
	if err := removeIfExists(data + metaSuffix); err != nil {
		return Output{}, fmt.Errorf("%w: write output %s: %w", ErrStorage, jobID, err)
	}
	if err := os.Rename(cw.f.Name(), data); err != nil {
		return Output{}, fmt.Errorf("%w: write output %s: %w", ErrStorage, jobID, err)
	}
	cw.kept = true
	if inAttr {
		if err := syncDir(s.outputs); err != nil {
			return Output{}, fmt.Errorf("%w: write output %s: %w", ErrStorage, jobID, err)
		}
		return out, nil
	}
	if err := s.writeFileAtomic(s.outputs, jobID+metaSuffix, side); err != nil {
		os.Remove(data)
		return Output{}, fmt.Errorf("write output %s meta: %w", jobID, err)
	}
	return out, nil
}

// checkOutputMeta refuses a content type that is not a media type.
func checkOutputMeta(meta OutputMeta) error {
	if meta.ContentType != "" {
		if _, _, err := mime.ParseMediaType(meta.ContentType); err != nil {
			return fmt.Errorf("blobstore: output content type %q: %w", meta.ContentType, err)
		}
	}
	return nil
}

// OutputInfo returns the job's output size, hash and metadata; ErrNotFound if
// no complete output exists.
func (s *Store) OutputInfo(jobID string) (Output, OutputMeta, error) {
	if !validID(jobID) {
		return Output{}, OutputMeta{}, ErrInvalidID
	}
	f, side, err := s.openOutput(jobID)
	if err != nil {
		return Output{}, OutputMeta{}, err
	}
	f.Close()
	return Output{Bytes: side.Bytes, SHA256: side.SHA256}, OutputMeta{ContentType: side.ContentType, Filename: side.Filename}, nil
}

// openOutput opens the output and reads its metadata under the id lock, so the pair is
// consistent even while PendingOutput.Commit (behind WriteOutput too) replaces them.
func (s *Store) openOutput(jobID string) (*os.File, outputSidecar, error) {
	unlock := s.lockID(jobID)
	defer unlock()
	var side outputSidecar
	f, err := os.Open(filepath.Join(s.outputs, jobID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, side, fmt.Errorf("output %s: %w", jobID, ErrNotFound)
	} else if err != nil {
		return nil, side, fmt.Errorf("%w: output %s: %w", ErrStorage, jobID, err)
	}
	b, err := getAttr(f, metaAttr)
	if errors.Is(err, errNoMetaAttr) {
		b, err = os.ReadFile(filepath.Join(s.outputs, jobID+metaSuffix))
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("output %s: %w", jobID, ErrNotFound)
		}
	}
	if err == nil {
		if err = json.Unmarshal(b, &side); err != nil {
			err = fmt.Errorf("%w: output %s meta is corrupt: %w", ErrStorage, jobID, err)
		}
	} else if !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("%w: output %s meta: %w", ErrStorage, jobID, err)
	}
	if err != nil {
		f.Close()
		return nil, outputSidecar{}, err
	}
	return f, side, nil
}

// Delete removes the job's upload, input, output and its metadata; files that
// do not exist are fine. An upload still streaming may land afterwards; JobIDs
// lets a sweep find it.
func (s *Store) Delete(jobID string) error {
	if !validID(jobID) {
		return ErrInvalidID
	}
	unlock := s.lockID(jobID)
	defer unlock()
	var errs []error
	for _, p := range []string{
		filepath.Join(s.uploads, jobID),
		filepath.Join(s.inputs, jobID),
		filepath.Join(s.outputs, jobID+metaSuffix), // marker first: a half-deleted output is absent
		filepath.Join(s.outputs, jobID),
	} {
		errs = append(errs, removeIfExists(p))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: delete %s: %w", ErrStorage, jobID, err)
	}
	return nil
}

// DeleteInput removes the job's upload (and an earlier version's sealed input, when inputs/
// held any at Open: legacyInputs), keeping its output: once a job has finished its input is
// dead weight, and a PUT can no longer bring it back (checkUpload). Files that do not exist
// are fine.
func (s *Store) DeleteInput(jobID string) error {
	if !validID(jobID) {
		return ErrInvalidID
	}
	unlock := s.lockID(jobID)
	defer unlock()
	// inputs/{id} only where an earlier version sealed there (legacyInputs): a missing name
	// costs os.Remove two failed system calls (unlink, then rmdir), and this runs for every
	// job.
	var errs []error
	for _, name := range s.inputNames(jobID) {
		errs = append(errs, removeIfExists(name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: delete input %s: %w", ErrStorage, jobID, err)
	}
	return nil
}

// InputIDs lists, sorted, the ids that have an upload or a sealed input, so a sweep can
// remove those of finished jobs.
func (s *Store) InputIDs() ([]string, error) {
	seen := make(map[string]struct{})
	for _, dir := range []string{s.uploads, s.inputs} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %w", ErrStorage, dir, err)
		}
		for _, e := range entries {
			if validID(e.Name()) {
				seen[e.Name()] = struct{}{}
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// JobIDs lists, sorted and without duplicates, every job id that has any file
// in the store, so a sweep can delete files whose job is gone.
func (s *Store) JobIDs() ([]string, error) {
	seen := make(map[string]struct{})
	for _, dir := range []string{s.uploads, s.inputs, s.outputs} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: list %s: %w", ErrStorage, dir, err)
		}
		for _, e := range entries {
			if id := strings.TrimSuffix(e.Name(), metaSuffix); validID(id) {
				seen[id] = struct{}{}
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// JobIDsAfter is JobIDs from the first id after after (all of them when after is ""), at most
// limit ids: one turn of a sweep that checks the listing in turns. Fewer than limit means the
// listing ended. A directory cannot be read from a name on, so the local store reads it
// whole, as JobIDs does; S3's listing starts at the id (s3store).
func (s *Store) JobIDsAfter(after string, limit int) ([]string, error) {
	ids, err := s.JobIDs()
	return PageAfter(ids, after, limit), err
}

// InputIDsAfter is InputIDs from the first id after after, at most limit ids (JobIDsAfter).
func (s *Store) InputIDsAfter(after string, limit int) ([]string, error) {
	ids, err := s.InputIDs()
	return PageAfter(ids, after, limit), err
}

// PageAfter returns the ids of sorted ids that follow after, at most limit of them.
func PageAfter(ids []string, after string, limit int) []string {
	from, found := slices.BinarySearch(ids, after)
	if found {
		from++
	}
	return ids[from:min(len(ids), from+max(limit, 0))]
}

// Check proves the store can write durably: it creates, writes, fsyncs and
// removes a small file under tmp/.
func (s *Store) Check() error {
	f, err := os.CreateTemp(s.tmp, "check-*")
	if err != nil {
		return fmt.Errorf("%w: check: %w", ErrStorage, err)
	}
	_, err = f.Write([]byte("ok\n"))
	err = errors.Join(err, f.Sync(), f.Close(), os.Remove(f.Name()))
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%w: check: %w", ErrStorage, err)
	}
	return nil
}

// writeFileAtomic writes data to dir/name through a synced temporary file in
// tmp/, a rename and a directory sync; on error nothing is left behind.
func (s *Store) writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(s.tmp, "atomic-*")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	_, err = f.Write(data)
	if err = errors.Join(err, f.Sync(), f.Close()); err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nil
}

// dirHasEntries reports whether dir holds anything, reading one name rather than the listing.
func dirHasEntries(dir string) (bool, error) {
	d, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if err == io.EOF {
		return false, nil
	}
	return len(names) > 0, err
}

// syncDir makes renames and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
