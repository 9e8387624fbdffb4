// Package s3store is convsvc's object storage on any S3-compatible endpoint (AWS S3, MinIO,
// Ceph RGW, versitygw, ...): presigned upload and download URLs from the S3 API itself, sealing
// by a server-side copy to a key no URL can write, outputs under a per-attempt key.
//
// # Layout
//
//	PREFIX/uploads/{id}             the job's input, PUT by the client through the upload URL
//	PREFIX/inputs/{id}/{etag}       the sealed input: a server-side copy of the upload, made at start
//	PREFIX/outputs/{id}/{attempt}   the output of one attempt, PUT by the worker that ran it
//
// PREFIX is Options.Prefix without leading or trailing slashes; when empty the keys start at
// uploads/ and outputs/.
//
// # Presigned URLs
//
// UploadURL presigns a PUT with the size signed as Content-Length, so S3 itself refuses a body
// of any other length (403 SignatureDoesNotMatch). The URL is signed with X-Amz-Date =
// expires - 900 s and X-Amz-Expires = 900, so it is valid exactly until expires, and the same
// job gives the same URL on every read. DownloadURL presigns a GET the same way, with
// response-content-type and response-content-disposition overrides.
//
// # Sealing
//
// A presigned URL cannot be revoked, so a PUT after start still lands (a client retrying a PUT
// whose answer it lost). Seal therefore copies the upload server-side (CopyObject, pinned to the
// ETag and version it found) to inputs/{id}/{etag}, a key no presigned URL names, before it
// calls start; OpenInput reads that copy, so the sealed input stays what was sealed on any
// S3-compatible store, versioned or not. The key carries the upload's ETag, so a later Seal of
// a replaced upload (a repeated start) writes another key and never changes a sealed copy. A
// copy whose start never committed (a crash, or a repeated start) is removed with the job's
// input (DeleteInput, and InputIDs lists it for the sweep). Jobs sealed before the copy existed
// have none: OpenInput then reads the upload by version id, or with If-Match on the ETag, which
// fails with ErrInputChanged when the object was replaced.
//
// # Errors
//
// Failures of S3 or the network wrap ErrStorage (which also matches blobstore.ErrStorage); a
// missing object wraps blobstore.ErrNotFound, an invalid id is blobstore.ErrInvalidID.
package s3store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/convsvc/convsvc/blobstore"
)

// IdleConns is how many idle connections to the endpoint the default HTTP client keeps for
// reuse: beyond it, a connection is closed when its request ends and the next request dials.
const IdleConns = 128

// URLTTL is how long a presigned URL is valid: SPEC's upload_expires_in, and the API's
// download URL lifetime.
const URLTTL = 900 * time.Second

// Sentinel errors; match them with errors.Is.
var (
	// ErrStorage wraps every failure of S3 or of the way to it that is not the API client's
	// fault (unreachable endpoint, 5xx, refused credentials, a missing bucket). It also matches
	// blobstore.ErrStorage, so callers that know only the local store answer "storage unavailable".
	ErrStorage = fmt.Errorf("s3store: object storage unavailable: %w", blobstore.ErrStorage)
	// ErrInputChanged means the upload was replaced after Seal recorded it (If-Match failed),
	// so the recorded input can no longer be read.
	ErrInputChanged = errors.New("s3store: the upload changed after the job started")
)

// Options configure a Store.
type Options struct {
	Endpoint  string // e.g. "http://127.0.0.1:9000"; empty means AWS's endpoint for Region
	Region    string // e.g. "us-east-1" (required)
	Bucket    string // required
	Prefix    string // key prefix, e.g. "convsvc"; slashes at either end are ignored
	AccessKey string // required unless Credentials is set
	SecretKey string // required unless Credentials is set
	// SessionToken goes with temporary AccessKey/SecretKey (AWS_SESSION_TOKEN).
	SessionToken string
	// Credentials, when set, replaces AccessKey/SecretKey/SessionToken (for instance the AWS
	// SDK's default chain: profiles, web identity, container and instance roles).
	Credentials aws.CredentialsProvider
	// PathStyle addresses the bucket as ENDPOINT/BUCKET/KEY rather than BUCKET.ENDPOINT/KEY;
	// MinIO, versitygw and most self-hosted servers need it.
	PathStyle bool
	// ScratchDir holds inputs downloaded for conversion and outputs before their upload;
	// default os.TempDir().
	ScratchDir string
	// HTTPClient is used for every request; default the SDK's transport keeping up to
	// IdleConns idle connections to the endpoint (the SDK's own keeps 10, fewer than the
	// starts, workers and transfers of one node that run at once).
	HTTPClient *http.Client
	// OpTimeout bounds each metadata request (HEAD, LIST, DELETE); default 30 s. Transfers of
	// inputs and outputs are not bounded by it.
	OpTimeout time.Duration
}

// Store is object storage in one bucket under one prefix. It is safe for concurrent use.
type Store struct {
	client    *s3.Client
	presign   *s3.PresignClient
	bucket    string
	prefix    string // "" or "PREFIX/"
	scratch   string
	opTimeout time.Duration
}

// New returns a Store for opts; it does not contact the server (see Check).
func New(opts Options) (*Store, error) {
	var missing []string
	required := []struct{ name, v string }{{"Region", opts.Region}, {"Bucket", opts.Bucket}}
	if opts.Credentials == nil {
		required = append(required, struct{ name, v string }{"AccessKey", opts.AccessKey}, struct{ name, v string }{"SecretKey", opts.SecretKey})
	}
	for _, f := range required {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("s3store: options %s are empty", strings.Join(missing, ", "))
	}
	var creds aws.CredentialsProvider
	switch c := opts.Credentials.(type) {
	case nil:
		creds = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(opts.AccessKey, opts.SecretKey, opts.SessionToken))
	case *aws.CredentialsCache: // the SDK's default chain comes cached
		creds = c
	default:
		creds = aws.NewCredentialsCache(c)
	}
	o := s3.Options{
		Region:                     opts.Region,
		Credentials:                creds,
		UsePathStyle:               opts.PathStyle,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if opts.Endpoint != "" {
		o.BaseEndpoint = aws.String(strings.TrimRight(opts.Endpoint, "/"))
	}
	if opts.HTTPClient != nil {
		o.HTTPClient = opts.HTTPClient
	} else {
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = IdleConns
			t.MaxIdleConnsPerHost = IdleConns
		})
	}
	client := s3.New(o)
	s := &Store{
		client:    client,
		presign:   s3.NewPresignClient(client),
		bucket:    opts.Bucket,
		scratch:   opts.ScratchDir,
		opTimeout: opts.OpTimeout,
	}
	if p := strings.Trim(opts.Prefix, "/"); p != "" {
		s.prefix = p + "/"
	}
	if s.scratch == "" {
		s.scratch = os.TempDir()
	}
	if s.opTimeout <= 0 {
		s.opTimeout = 30 * time.Second
	}
	return s, nil
}

// UploadKey is the key of the job's input.
func (s *Store) UploadKey(jobID string) string { return s.prefix + "uploads/" + jobID }

// OutputKey is the key of the output of the job's attempt.
func (s *Store) OutputKey(jobID string, attempt int) string {
	return s.outputDir(jobID) + strconv.Itoa(attempt)
}

func (s *Store) outputDir(jobID string) string { return s.prefix + "outputs/" + jobID + "/" }

// inputDir holds the job's sealed copies.
func (s *Store) inputDir(jobID string) string { return s.prefix + "inputs/" + jobID + "/" }

// InputKey is the key of the sealed copy of the job's upload whose ETag is etag.
func (s *Store) InputKey(jobID, etag string) string {
	name := strings.Trim(etag, `"`)
	if !plainETag(name) {
		sum := sha256.Sum256([]byte(etag))
		name = "h" + hex.EncodeToString(sum[:16])
	}
	return s.inputDir(jobID) + name
}

// plainETag matches the ETags S3 servers give (hex, "-" and a part count), which are safe in a key.
var plainETag = regexp.MustCompile(`^[0-9A-Za-z-]{1,80}$`).MatchString

// validID matches blobstore's job ids: ^job_[A-Za-z0-9]{1,64}$.
var validID = regexp.MustCompile(`^job_[A-Za-z0-9]{1,64}$`).MatchString

// fixedTimePresigner signs with a given time instead of the SDK's clock, which makes a URL
// depend only on its inputs.
type fixedTimePresigner struct {
	signer *v4.Signer
	at     time.Time
}

// PresignHTTP implements s3.HTTPPresignerV4.
func (p fixedTimePresigner) PresignHTTP(ctx context.Context, cred aws.Credentials, r *http.Request,
	payloadHash, service, region string, _ time.Time, optFns ...func(*v4.SignerOptions),
) (string, http.Header, error) {
	return p.signer.PresignHTTP(ctx, cred, r, payloadHash, service, region, p.at, optFns...)
}

// signedUntil makes a presign valid from expires-URLTTL to expires.
func signedUntil(expires time.Time) func(*s3.PresignOptions) {
	return func(o *s3.PresignOptions) {
		o.Expires = URLTTL
		o.Presigner = fixedTimePresigner{signer: v4.NewSigner(), at: expires.Add(-URLTTL).UTC()}
	}
}

// UploadURL returns the presigned PUT that accepts the job's input until expires; the body
// must be exactly size bytes (Content-Length is signed). The same arguments give the same URL.
func (s *Store) UploadURL(jobID string, size int64, expires time.Time) (string, error) {
	if !validID(jobID) {
		return "", blobstore.ErrInvalidID
	}
	if size < 0 {
		return "", fmt.Errorf("s3store: upload size %d is negative", size)
	}
	req, err := s.presign.PresignPutObject(context.Background(), &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.UploadKey(jobID)),
		ContentLength: aws.Int64(size),
	}, signedUntil(expires))
	if err != nil {
		return "", fmt.Errorf("s3store: presign upload %s: %w", jobID, err)
	}
	return req.URL, nil
}

// DownloadURL returns the presigned GET of the output of the job's attempt, valid until
// expires, whose response carries contentType and an attachment disposition with filename.
func (s *Store) DownloadURL(jobID string, attempt int, filename, contentType string, expires time.Time) (string, error) {
	if !validID(jobID) {
		return "", blobstore.ErrInvalidID
	}
	in := &s3.GetObjectInput{
		Bucket:                     aws.String(s.bucket),
		Key:                        aws.String(s.OutputKey(jobID, attempt)),
		ResponseContentDisposition: aws.String(contentDisposition(filename)),
	}
	if contentType != "" {
		in.ResponseContentType = aws.String(contentType)
	}
	req, err := s.presign.PresignGetObject(context.Background(), in, signedUntil(expires))
	if err != nil {
		return "", fmt.Errorf("s3store: presign download %s: %w", jobID, err)
	}
	return req.URL, nil
}

// contentDisposition is "attachment", with the filename when there is one.
func contentDisposition(filename string) string {
	if filename != "" {
		if v := mime.FormatMediaType("attachment", map[string]string{"filename": filename}); v != "" {
			return v
		}
	}
	return "attachment"
}

// UploadInfo is what Seal found at the upload key: the object the job converts.
type UploadInfo struct {
	Size      int64
	ETag      string // as S3 returns it, with quotes
	VersionID string // "" unless the bucket is versioned
	// SHA256 is the lowercase hex SHA-256 of the sealed input, which the object store took
	// while it wrote Seal's copy (CopyObject with the SHA-256 checksum); "" when the store
	// returned none. OpenInput neither needs nor checks it.
	SHA256 string
}

// Seal reads the size, ETag and version id of the job's upload, copies exactly that object
// server-side to InputKey (which no presigned URL can write), and then calls start with them,
// so the job store records the start only once the copy exists. Seal returns an error wrapping
// blobstore.ErrNotFound, without calling start, when nothing was uploaded, and otherwise
// start's error.
func (s *Store) Seal(jobID string, start func(UploadInfo) error) error {
	if !validID(jobID) {
		return blobstore.ErrInvalidID
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
	defer cancel()
	h, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.UploadKey(jobID))})
	if err != nil {
		if !isNotFound(err) {
			return fmt.Errorf("%w: seal %s: %w", ErrStorage, jobID, err)
		}
		// A HEAD answer has no body, so a missing bucket is a bare 404 too: tell them apart.
		if _, berr := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); berr != nil {
			return fmt.Errorf("%w: seal %s: bucket %s: %w", ErrStorage, jobID, s.bucket, berr)
		}
		return fmt.Errorf("seal %s: no upload: %w", jobID, blobstore.ErrNotFound)
	}
	info := UploadInfo{Size: aws.ToInt64(h.ContentLength), ETag: aws.ToString(h.ETag), VersionID: aws.ToString(h.VersionId)}
	if info.VersionID == "null" { // S3's id of an object written while versioning was off
		info.VersionID = ""
	}
	if info.SHA256, err = s.copyInput(ctx, jobID, info); err != nil {
		return fmt.Errorf("seal %s: %w", jobID, err)
	}
	return start(info)
}

// copyInput copies the upload info describes server-side to InputKey and returns the copy's
// SHA-256 in hex, which the store computes as it writes the copy ("" when it returns none).
// The copy is of that object only: a PUT landing since fails the copy (412) rather than
// sealing other bytes.
func (s *Store) copyInput(ctx context.Context, jobID string, info UploadInfo) (string, error) {
	if info.ETag == "" {
		return "", fmt.Errorf("%w: the server gave the upload no ETag", ErrStorage)
	}
	source := s.bucket + "/" + s.UploadKey(jobID)
	if info.VersionID != "" {
		source += "?versionId=" + info.VersionID
	}
	out, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket:            aws.String(s.bucket),
		Key:               aws.String(s.InputKey(jobID, info.ETag)),
		CopySource:        aws.String(source),
		CopySourceIfMatch: aws.String(info.ETag),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
	})
	if err != nil {
		if isPreconditionFailed(err) {
			return "", fmt.Errorf("%w: the upload was replaced meanwhile; retry: %w", ErrStorage, err)
		}
		return "", fmt.Errorf("%w: copy the upload: %w", ErrStorage, err)
	}
	if out.CopyObjectResult == nil {
		return "", nil
	}
	// A single-part object's checksum is the SHA-256 of its bytes, base64 (a composite one,
	// "...-N", is of its parts' checksums and is not kept).
	sum, err := base64.StdEncoding.DecodeString(aws.ToString(out.CopyObjectResult.ChecksumSHA256))
	if err != nil || len(sum) != sha256.Size {
		return "", nil
	}
	return hex.EncodeToString(sum), nil
}

// getInput GETs the sealed copy of the job's input (copy true), or for a job sealed before
// copies existed, the upload by version id, else with If-Match on the ETag.
func (s *Store) getInput(ctx context.Context, jobID string, info UploadInfo) (out *s3.GetObjectOutput, copy bool, err error) {
	if info.ETag != "" {
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.InputKey(jobID, info.ETag))})
		if err == nil || !isNotFound(err) {
			return out, true, err
		}
	}
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.UploadKey(jobID))}
	if info.VersionID != "" {
		in.VersionId = aws.String(info.VersionID)
	} else {
		in.IfMatch = aws.String(info.ETag)
	}
	out, err = s.client.GetObject(ctx, in)
	return out, false, err
}

// OpenInput downloads the input Seal recorded into the scratch dir and returns it open for
// reading at offset 0: the sealed copy, or for a job sealed before copies existed the upload
// itself by version id, else by If-Match on the ETag. The file has no
// name left on Unix (it is removed once open), so closing it frees the space. A replaced upload
// gives ErrInputChanged, a missing one blobstore.ErrNotFound.
func (s *Store) OpenInput(jobID string, info UploadInfo) (*os.File, error) {
	if !validID(jobID) {
		return nil, blobstore.ErrInvalidID
	}
	if info.ETag == "" && info.VersionID == "" {
		return nil, fmt.Errorf("s3store: open input %s: the start recorded neither ETag nor version id", jobID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, copied, err := s.getInput(ctx, jobID, info)
	if err != nil {
		switch {
		case isPreconditionFailed(err):
			return nil, fmt.Errorf("open input %s: %w", jobID, ErrInputChanged)
		case isNotFound(err):
			return nil, fmt.Errorf("open input %s: %w", jobID, blobstore.ErrNotFound)
		}
		return nil, fmt.Errorf("%w: open input %s: %w", ErrStorage, jobID, err)
	}
	defer out.Body.Close()
	if !copied && info.ETag != "" && aws.ToString(out.ETag) != info.ETag {
		return nil, fmt.Errorf("open input %s: ETag %s, recorded %s: %w", jobID, aws.ToString(out.ETag), info.ETag, ErrInputChanged)
	}
	f, err := os.CreateTemp(s.scratch, "in-"+jobID+"-*")
	if err != nil {
		return nil, fmt.Errorf("s3store: open input %s: scratch file: %w", jobID, err)
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, out.Body) // io.Copy's 32 KiB buffer: memory stays bounded
	if err != nil {
		return nil, fmt.Errorf("%w: open input %s: read: %w", ErrStorage, jobID, err)
	}
	if n != info.Size {
		return nil, fmt.Errorf("open input %s: %d bytes, recorded %d: %w", jobID, n, info.Size, ErrInputChanged)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("s3store: open input %s: %w", jobID, err)
	}
	keep = true
	_ = os.Remove(f.Name()) // open files outlive their name on Unix; elsewhere this fails harmlessly
	return f, nil
}

// PendingOutput is an output being written to a scratch file; Commit uploads it under the
// attempt's key, Discard drops it. One goroutine writes it and then calls Commit or Discard
// (Discard after Commit does nothing).
type PendingOutput struct {
	s       *Store
	jobID   string
	attempt int
	f       *os.File
	h       hash.Hash
	n       int64
	err     error // the first write error
	done    bool
	// external: a worker process writes f through its descriptor (File); Commit takes what
	// f then holds.
	external bool
}

// CreateOutput starts the output of the job's attempt; nothing of it is stored until Commit.
func (s *Store) CreateOutput(jobID string, attempt int) (*PendingOutput, error) {
	if !validID(jobID) {
		return nil, blobstore.ErrInvalidID
	}
	if attempt < 0 {
		return nil, fmt.Errorf("s3store: attempt %d is negative", attempt)
	}
	f, err := os.CreateTemp(s.scratch, "out-"+jobID+"-*")
	if err != nil {
		return nil, fmt.Errorf("s3store: write output %s: scratch file: %w", jobID, err)
	}
	return &PendingOutput{s: s, jobID: jobID, attempt: attempt, f: f, h: sha256.New()}, nil
}

// File hands the output's scratch file to a writer that needs a descriptor (a worker process
// writes the output straight into it, not into a scratch file of its own that is then
// copied): it is empty and at offset 0, whatever it holds at Commit is the output, hashed
// then by reading it back. Nothing may be written through Write before or after, and the
// writer must be done before Commit or Discard; the file stays the PendingOutput's.
func (p *PendingOutput) File() (*os.File, error) {
	if p.n > 0 || p.external || p.done {
		return nil, fmt.Errorf("s3store: File on output %s already written to", p.jobID)
	}
	p.external = true
	return p.f, nil
}

// Write appends to the output; an error is the scratch disk's.
func (p *PendingOutput) Write(b []byte) (int, error) {
	if p.external {
		return 0, fmt.Errorf("s3store: output %s: the file was handed to another writer (File)", p.jobID)
	}
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.f.Write(b)
	p.h.Write(b[:n])
	p.n += int64(n)
	if err != nil {
		p.err = fmt.Errorf("s3store: write output %s: %w", p.jobID, err)
	}
	return n, p.err
}

// Written returns the output's scratch file to read back (the output check before Commit)
// and its size; the reader stays valid until Commit or Discard.
func (p *PendingOutput) Written() (io.ReaderAt, int64, error) {
	if p.err != nil {
		return nil, 0, p.err
	}
	if p.external {
		fi, err := p.f.Stat()
		if err != nil {
			return nil, 0, fmt.Errorf("s3store: write output %s: %w", p.jobID, err)
		}
		return p.f, fi.Size(), nil
	}
	return p.f, p.n, nil
}

// adopt takes what another writer put into the file (File) as the output: its size, and its
// hash by reading it back.
func (p *PendingOutput) adopt() error {
	fi, err := p.f.Stat()
	if err != nil {
		return fmt.Errorf("s3store: write output %s: %w", p.jobID, err)
	}
	p.n = fi.Size()
	p.h.Reset()
	if _, err := io.Copy(p.h, io.NewSectionReader(p.f, 0, p.n)); err != nil {
		return fmt.Errorf("s3store: write output %s: %w", p.jobID, err)
	}
	return nil
}

// Discard removes the scratch file; it does nothing after Commit.
func (p *PendingOutput) Discard() {
	if p.done {
		return
	}
	p.done = true
	p.f.Close()
	os.Remove(p.f.Name())
}

// Commit uploads the output with one PutObject under the attempt's key, with meta's content
// type and an attachment disposition, and removes the scratch file. An earlier attempt's
// output is never replaced. It returns the size and SHA-256 (also stored as the object's
// x-amz-meta-sha256).
func (p *PendingOutput) Commit(meta blobstore.OutputMeta) (blobstore.Output, error) {
	if p.done {
		return blobstore.Output{}, fmt.Errorf("s3store: output %s already committed or discarded", p.jobID)
	}
	defer p.Discard()
	if p.err != nil {
		return blobstore.Output{}, p.err
	}
	if p.external {
		if err := p.adopt(); err != nil {
			return blobstore.Output{}, err
		}
	}
	ct := meta.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	} else if _, _, err := mime.ParseMediaType(ct); err != nil {
		return blobstore.Output{}, fmt.Errorf("s3store: output content type %q: %w", ct, err)
	}
	out := blobstore.Output{Bytes: p.n, SHA256: hex.EncodeToString(p.h.Sum(nil))}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return blobstore.Output{}, fmt.Errorf("s3store: write output %s: %w", p.jobID, err)
	}
	_, err := p.s.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket:             aws.String(p.s.bucket),
		Key:                aws.String(p.s.OutputKey(p.jobID, p.attempt)),
		Body:               p.f,
		ContentLength:      aws.Int64(p.n),
		ContentType:        aws.String(ct),
		ContentDisposition: aws.String(contentDisposition(meta.Filename)),
		Metadata:           map[string]string{"sha256": out.SHA256},
	})
	if err != nil {
		return blobstore.Output{}, fmt.Errorf("%w: write output %s: %w", ErrStorage, p.jobID, err)
	}
	return out, nil
}

// Delete removes every object of the job: its upload, its sealed copies and the outputs of
// all attempts, with every version of each in a versioned bucket. Objects that do not exist
// are fine.
func (s *Store) Delete(jobID string) error {
	if !validID(jobID) {
		return blobstore.ErrInvalidID
	}
	if err := s.deleteUnder(jobID, s.inputDir(jobID), s.outputDir(jobID)); err != nil {
		return fmt.Errorf("%w: delete %s: %w", ErrStorage, jobID, err)
	}
	return nil
}

// deleteUnder deletes the job's upload and every object under the dirs, with every version
// of each in a versioned bucket.
//
// The upload has a key of its own, so it is deleted by name first, and its answer tells
// whether the bucket keeps versions: a plain delete (no version id, no delete marker) is one
// in a bucket that never had versioning on, where that delete was the whole of it and
// listing the current objects under the dirs finds everything else. Otherwise every version
// and delete marker of the upload and under the dirs is listed and deleted. The upload is
// not listed by prefix unless versions are kept: uploads/job_1 is also a prefix of
// uploads/job_12, and stores on a filesystem (versitygw's posix backend) answer such a
// listing by reading the whole uploads/ directory, every job's.
func (s *Store) deleteUnder(jobID string, dirs ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
	defer cancel()
	upload := s.UploadKey(jobID)
	out, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(upload)})
	if err != nil && !isNotFound(err) {
		return err
	}
	versioned := err != nil || aws.ToBool(out.DeleteMarker) || aws.ToString(out.VersionId) != ""
	list := s.listCurrent
	if versioned {
		list = s.listVersions
		dirs = append([]string{upload}, dirs...)
	}
	var errs []error
	for _, prefix := range dirs {
		objs, err := list(ctx, prefix)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range objs {
			if prefix == upload && o.key != prefix { // uploads/job_1 is a prefix of uploads/job_12
				continue
			}
			in := &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(o.key)}
			if o.version != "" {
				in.VersionId = aws.String(o.version)
			}
			if _, err := s.client.DeleteObject(ctx, in); err != nil && !isNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

type objectVersion struct{ key, version string }

// listVersions lists every version and delete marker under prefix; where the server has no
// ListObjectVersions (NotImplemented), it lists the current objects instead.
func (s *Store) listVersions(ctx context.Context, prefix string) ([]objectVersion, error) {
	var objs []objectVersion
	vp := s3.NewListObjectVersionsPaginator(s.client, &s3.ListObjectVersionsInput{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)})
	for vp.HasMorePages() {
		page, err := vp.NextPage(ctx)
		if err != nil {
			if apiCode(err) == "NotImplemented" {
				return s.listCurrent(ctx, prefix)
			}
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, v := range page.Versions {
			objs = append(objs, objectVersion{aws.ToString(v.Key), aws.ToString(v.VersionId)})
		}
		for _, v := range page.DeleteMarkers {
			objs = append(objs, objectVersion{aws.ToString(v.Key), aws.ToString(v.VersionId)})
		}
	}
	return objs, nil
}

func (s *Store) listCurrent(ctx context.Context, prefix string) ([]objectVersion, error) {
	var objs []objectVersion
	err := s.list(ctx, prefix, func(o types.Object) {
		objs = append(objs, objectVersion{key: aws.ToString(o.Key)})
	})
	return objs, err
}

// list calls fn for every current object under prefix, page by page (ListObjectsV2).
func (s *Store) list(ctx context.Context, prefix string, fn func(types.Object)) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			fn(o)
		}
	}
	return nil
}

// JobIDs lists, sorted and without duplicates, every job id that has an object under the
// prefix (an upload, a sealed copy or an output of any attempt), so a sweep can delete objects whose job is
// gone. It pages through ListObjectsV2; a bucket lifecycle rule is the cheaper backstop.
func (s *Store) JobIDs() ([]string, error) {
	return s.idsUnderAfter("", math.MaxInt, "uploads/", "inputs/", "outputs/")
}

// Check proves the bucket is reachable with the credentials (HeadBucket).
func (s *Store) Check() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout)
	defer cancel()
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		return fmt.Errorf("%w: check bucket %s: %w", ErrStorage, s.bucket, err)
	}
	return nil
}

// apiCode is the S3 error code of err, or "".
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// httpStatusOf is the HTTP status of S3's answer, or 0 when there was none.
func httpStatusOf(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	switch apiCode(err) {
	case "NoSuchKey", "NotFound", "NoSuchVersion":
		return true
	}
	return httpStatusOf(err) == http.StatusNotFound && apiCode(err) != "NoSuchBucket"
}

func isPreconditionFailed(err error) bool {
	return apiCode(err) == "PreconditionFailed" || httpStatusOf(err) == http.StatusPreconditionFailed
}

// DeleteInput removes the job's upload and its sealed copies (every version of each in a
// versioned bucket) and keeps its outputs. A missing upload is fine.
func (s *Store) DeleteInput(jobID string) error {
	if !validID(jobID) {
		return blobstore.ErrInvalidID
	}
	if err := s.deleteUnder(jobID, s.inputDir(jobID)); err != nil {
		return fmt.Errorf("%w: delete input %s: %w", ErrStorage, jobID, err)
	}
	return nil
}

// InputIDs lists, sorted and without duplicates, the job ids that have an upload or a sealed
// copy under the prefix, so a sweep can remove the inputs of finished or vanished jobs.
func (s *Store) InputIDs() ([]string, error) {
	return s.idsUnderAfter("", math.MaxInt, "uploads/", "inputs/")
}

// JobIDsAfter is JobIDs from the first id after after (all of them when after is ""), at
// most limit ids: one turn of a sweep that checks the bucket in turns. Each listing starts
// at after's own key (ListObjectsV2's StartAfter) and stops once it has limit ids, so a turn
// reads about limit keys of each folder, not the bucket. Fewer than limit means the listing
// ended.
func (s *Store) JobIDsAfter(after string, limit int) ([]string, error) {
	return s.idsUnderAfter(after, limit, "uploads/", "inputs/", "outputs/")
}

// InputIDsAfter is InputIDs from the first id after after, at most limit ids (JobIDsAfter).
func (s *Store) InputIDsAfter(after string, limit int) ([]string, error) {
	return s.idsUnderAfter(after, limit, "uploads/", "inputs/")
}

// idsUnderAfter lists, sorted and without duplicates, the first limit job ids after after
// named by the first path element under any of the dirs. A key is the dir, the id, and
// nothing or "/..." after it, and an id's characters all sort after '/' (validID), so each
// dir's keys list its ids in order: the first limit ids of each dir hold the first limit of
// all of them.
func (s *Store) idsUnderAfter(after string, limit int, dirs ...string) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*s.opTimeout)
	defer cancel()
	var ids []string
	for _, dir := range dirs {
		in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + dir)}
		if after != "" {
			in.StartAfter = aws.String(s.prefix + dir + after) // after's own keys follow it: skipped below
		}
		p := s3.NewListObjectsV2Paginator(s.client, in)
		n, last := 0, ""
		for n < limit && p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("%w: list %s: %w", ErrStorage, s.prefix+dir, err)
			}
			for _, o := range page.Contents {
				id, _, _ := strings.Cut(strings.TrimPrefix(aws.ToString(o.Key), s.prefix+dir), "/")
				if validID(id) && id > after && id != last {
					ids, last, n = append(ids, id), id, n+1
				}
			}
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return ids[:min(len(ids), limit)], nil
}
