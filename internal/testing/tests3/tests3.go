// Package tests3 gives a test a fresh bucket on a real S3-compatible server.
//
// With CONVSVC_TEST_S3_ENDPOINT set (and CONVSVC_TEST_S3_ACCESS_KEY, CONVSVC_TEST_S3_SECRET_KEY,
// CONVSVC_TEST_S3_REGION, default us-east-1), the tests use that server: MinIO, Ceph RGW, AWS or
// anything else that speaks S3 with path-style addressing. Otherwise the package starts versitygw
// v1.8.0 (Apache-2.0) with its posix backend, once per test binary, on a free 127.0.0.1 port.
//
// The versitygw binary is built from its Go module at the pinned version and cached, so CI pays
// for the build once: $CONVSVC_VERSITYGW names it, else it is
// <os.UserCacheDir()>/convsvc/versitygw-v1.8.0/versitygw, built there on first use under a file
// lock (parallel test binaries build it once). .ci/versitygw builds the same file ahead of time.
// When it cannot be built (no module proxy), tests that need S3 skip, except with CI=true, where
// they fail.
//
// A test package that uses Bucket runs its tests through Main, which stops the server:
//
//	func TestMain(m *testing.M) { os.Exit(tests3.Main(m)) }
package tests3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// VersityGWVersion is the versitygw release the tests run.
const VersityGWVersion = "v1.8.0"

// versitygwModule is the package go install builds.
const versitygwModule = "github.com/versity/versitygw/cmd/versitygw"

// Credentials of the local versitygw's root account.
const (
	localAccessKey = "convsvcadmin"
	localSecretKey = "convsvcsecret123"
	localRegion    = "us-east-1"
)

// Env variables that point the tests at an existing S3-compatible server.
const (
	EnvEndpoint  = "CONVSVC_TEST_S3_ENDPOINT"
	EnvAccessKey = "CONVSVC_TEST_S3_ACCESS_KEY"
	EnvSecretKey = "CONVSVC_TEST_S3_SECRET_KEY"
	EnvRegion    = "CONVSVC_TEST_S3_REGION"
	// EnvBinary names a prebuilt versitygw binary to run instead of the cached one.
	EnvBinary = "CONVSVC_VERSITYGW"
)

// Server is an S3-compatible endpoint and the credentials to use it.
type Server struct {
	Endpoint  string // e.g. http://127.0.0.1:40123
	Region    string
	AccessKey string
	SecretKey string
	// Local is true for the versitygw this package started (posix backend with versioning).
	Local bool
	// Pid is the local versitygw's process id (benchmarks read its CPU time); 0 when external.
	Pid int
}

// Bucket is a fresh, empty bucket on Server; it is emptied and deleted at the test's cleanup.
type Bucket struct {
	Server
	Name string
}

// Client returns an S3 client for the server (path-style, static credentials).
func (s Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint:               aws.String(s.Endpoint),
		Region:                     s.Region,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		UsePathStyle:               true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

var (
	startOnce sync.Once
	server    Server
	startErr  error        // why the server could not start
	skippable bool         // startErr is "no binary and no way to build it"
	proc      *os.Process  // the local versitygw, nil when external
	procExit  <-chan error // receives its exit
	procDir   string
)

// Main runs the tests and then stops the local server, if one was started. Use it from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop kills the local versitygw and removes its files; Main calls it.
func Stop() {
	if proc != nil {
		_ = proc.Kill()
		<-procExit
		proc = nil
	}
	if procDir != "" {
		_ = os.RemoveAll(procDir)
		procDir = ""
	}
}

// Options adjust NewBucket.
type Options struct {
	// Versioned enables bucket versioning; the test skips when the server refuses it.
	Versioned bool
}

// NewBucket returns a fresh bucket for t, starting the server on first use, and deletes the
// bucket with everything in it when t ends.
func NewBucket(t testing.TB, opts Options) Bucket {
	t.Helper()
	srv := Start(t)
	name := "convsvc-test-" + randomHex(8)
	cl := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if srv.Region != "us-east-1" { // AWS wants the region named anywhere else
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(srv.Region)}
	}
	if _, err := cl.CreateBucket(ctx, in); err != nil {
		t.Fatalf("tests3: create bucket %s on %s: %v", name, srv.Endpoint, err)
	}
	t.Cleanup(func() {
		if err := deleteBucket(cl, name); err != nil {
			t.Errorf("tests3: delete bucket %s: %v", name, err)
		}
	})
	if opts.Versioned {
		_, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
			Bucket:                  aws.String(name),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
		})
		if err != nil {
			if srv.Local {
				t.Fatalf("tests3: enable versioning on %s: %v", name, err)
			}
			t.Skipf("tests3: the server at %s does not enable versioning: %v", srv.Endpoint, err)
		}
	}
	return Bucket{Server: srv, Name: name}
}

// deleteBucket deletes every object version, delete marker and object in the bucket, then it.
func deleteBucket(cl *s3.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	vp := s3.NewListObjectVersionsPaginator(cl, &s3.ListObjectVersionsInput{Bucket: aws.String(name)})
	for vp.HasMorePages() {
		page, err := vp.NextPage(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("list versions: %w", err))
			break
		}
		for _, v := range page.Versions {
			_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: v.Key, VersionId: v.VersionId})
			errs = append(errs, err)
		}
		for _, v := range page.DeleteMarkers {
			_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: v.Key, VersionId: v.VersionId})
			errs = append(errs, err)
		}
	}
	op := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
	for op.HasMorePages() {
		page, err := op.NextPage(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("list objects: %w", err))
			break
		}
		for _, o := range page.Contents {
			_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key})
			errs = append(errs, err)
		}
	}
	if _, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Start returns the server, starting the local versitygw on first use. It skips t when the
// binary cannot be built, or fails it with CI=true.
func Start(t testing.TB) Server {
	t.Helper()
	startOnce.Do(start)
	if startErr != nil {
		if skippable && os.Getenv("CI") != "true" {
			t.Skipf("tests3: no S3 server: %v (set %s to use one, or run .ci/versitygw)", startErr, EnvEndpoint)
		}
		t.Fatalf("tests3: no S3 server: %v", startErr)
	}
	return server
}

func start() {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		server = Server{
			Endpoint:  ep,
			Region:    envOr(EnvRegion, localRegion),
			AccessKey: os.Getenv(EnvAccessKey),
			SecretKey: os.Getenv(EnvSecretKey),
		}
		return
	}
	bin, err := Binary()
	if err != nil {
		startErr, skippable = err, true
		return
	}
	server, startErr = startLocal(bin)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// startLocal runs versitygw on a free loopback port and waits until it accepts connections.
func startLocal(bin string) (Server, error) {
	var lastErr error
	for range 3 { // the free port can be taken between probing it and versitygw binding it
		dir, err := os.MkdirTemp("", "convsvc-versitygw-")
		if err != nil {
			return Server{}, err
		}
		root, versions := filepath.Join(dir, "root"), filepath.Join(dir, "versions")
		if err := errors.Join(os.Mkdir(root, 0o700), os.Mkdir(versions, 0o700)); err != nil {
			return Server{}, err
		}
		addr, err := freePort()
		if err != nil {
			return Server{}, err
		}
		logf, err := os.Create(filepath.Join(dir, "versitygw.log"))
		if err != nil {
			return Server{}, err
		}
		cmd := exec.Command(bin, "--port", addr, "posix", "--versioning-dir", versions, root)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+localAccessKey, "ROOT_SECRET_KEY="+localSecretKey)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = procAttr()
		if err := cmd.Start(); err != nil {
			logf.Close()
			return Server{}, fmt.Errorf("start %s: %w", bin, err)
		}
		logf.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if err := waitListening(addr, exited); err != nil {
			_ = cmd.Process.Kill()
			<-exited
			log, _ := os.ReadFile(filepath.Join(dir, "versitygw.log"))
			lastErr = fmt.Errorf("versitygw on %s: %w; its log:\n%s", addr, err, tail(log, 2000))
			os.RemoveAll(dir)
			continue
		}
		proc, procExit, procDir = cmd.Process, exited, dir
		return Server{
			Endpoint:  "http://" + addr,
			Region:    localRegion,
			AccessKey: localAccessKey,
			SecretKey: localSecretKey,
			Local:     true,
			Pid:       cmd.Process.Pid,
		}, nil
	}
	return Server{}, lastErr
}

// waitListening polls addr until it accepts a TCP connection, the process exits, or 60 s pass
// (generous: the machine may be busy).
func waitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited before listening: %v", err)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("not listening after 60 s")
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Binary returns the path of the versitygw binary: $CONVSVC_VERSITYGW, else the cached build,
// building it when missing.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	return Build(dir)
}

// CacheDir is where the versitygw build is cached: <os.UserCacheDir()>/convsvc/versitygw-v1.8.0.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache dir for the versitygw build: %w", err)
	}
	return filepath.Join(base, "convsvc", "versitygw-"+VersityGWVersion), nil
}

// Build returns dir/versitygw, building it with go install (outside this module, under a
// lock file in dir) when it is missing.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "versitygw")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil { // another process built it while we waited
		return bin, nil
	}
	tmpBin, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmpBin)
	work, err := os.MkdirTemp("", "convsvc-versitygw-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", versitygwModule+"@"+VersityGWVersion)
	cmd.Dir = work // outside this module, so its go.mod is not consulted
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+tmpBin, "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go install %s@%s: %w: %s", versitygwModule, VersityGWVersion, err, tail(out, 1500))
	}
	if err := os.Rename(filepath.Join(tmpBin, "versitygw"), bin); err != nil {
		return "", err
	}
	return bin, nil
}
