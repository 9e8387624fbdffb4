// Package testpg gives a test a fresh, empty PostgreSQL database.
//
// With CONVSVC_TEST_POSTGRES_URL set (a postgres:// URL of a role that may CREATE DATABASE),
// every database is created on that server and dropped at the test's cleanup. Otherwise the
// first call starts one private server for the whole test binary from Debian's postgresql
// package (initdb and postgres from the newest /usr/lib/postgresql/*/bin, a temporary data
// directory, a free loopback port, fsync off), and Main stops it and removes its directory
// when the tests end; if the binary dies first, the server gets SIGQUIT (its parent-death
// signal) and shuts down at once, leaving only its directory under $TMPDIR. Each call creates its own database, so tests can run in parallel.
//
// When PostgreSQL is not installed the test is skipped, except under CI=true, where it fails:
// CI must run every backend.
package testpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable that points the tests at an external PostgreSQL server.
const EnvURL = "CONVSVC_TEST_POSTGRES_URL"

var (
	mainCalled bool
	startOnce  sync.Once
	srv        *server
	srvErr     error
	errMissing = errors.New("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres)")
)

// Main runs the package's tests (m.Run) and then stops the server started for them, if any.
// A package whose tests call NewDatabase calls it from TestMain:
//
//	func TestMain(m *testing.M) { testpg.Main(m) }
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain that has more to do after the tests: it runs them, stops the
// private server, and returns m.Run's exit code.
func Run(m *testing.M) int {
	mainCalled = true
	code := m.Run()
	if srv != nil {
		if err := srv.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		}
	}
	return code
}

// NewDatabase creates an empty database for t and returns its connection URL. The database
// is dropped when t ends (on the private server, the whole server goes when the binary ends).
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		if !mainCalled {
			t.Fatal("testpg: call testpg.Main(m) from the package's TestMain, so the private server is stopped")
		}
		startOnce.Do(func() { srv, srvErr = startServer() })
		if errors.Is(srvErr, errMissing) {
			if os.Getenv("CI") == "true" {
				t.Fatalf("testpg: %v: install postgresql (apt-get install -y postgresql), or set %s", srvErr, EnvURL)
			}
			t.Skipf("testpg: %v; install postgresql or set %s to run the PostgreSQL tests", srvErr, EnvURL)
		}
		if srvErr != nil {
			t.Fatalf("testpg: start PostgreSQL: %v", srvErr)
		}
		base = srv.url("postgres")
	}
	name := "convsvc_test_" + randomHex(8)
	dbURL, err := withDatabase(base, name)
	if err != nil {
		t.Fatalf("testpg: %s: %v", EnvURL, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := admin(ctx, base, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testpg: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := admin(ctx, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testpg: drop database %s: %v", name, err)
		}
	})
	return dbURL
}

// admin runs one statement on a short connection to the maintenance database at base.
func admin(ctx context.Context, base, stmt string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

// withDatabase replaces the database name in a postgres:// URL.
func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", fmt.Errorf("want a postgres:// URL, got scheme %q", u.Scheme)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// server is the private PostgreSQL of this test binary.
type server struct {
	bin  string // directory of initdb, pg_ctl, postgres
	dir  string // temporary directory: data/ and the socket
	port int
	cred *syscall.Credential // the postgres user when running as root

	cmd    *exec.Cmd  // the postmaster
	exited chan error // its Wait result
}

func (s *server) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

func (s *server) data() string { return filepath.Join(s.dir, "data") }

// binDir finds the newest /usr/lib/postgresql/VERSION/bin that holds postgres.
func binDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(matches) == 0 {
		return "", errMissing
	}
	version := func(p string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(p))), 64)
		return v
	}
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) < version(matches[j]) })
	return filepath.Dir(matches[len(matches)-1]), nil
}

// startServer runs initdb and then postgres (as user postgres when root, since both refuse
// to run as root) on a free loopback port.
func startServer() (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "convsvc-testpg-")
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user (from the postgresql package): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// The port is free when picked; another process may take it before postgres binds it,
	// so a failed start is tried again on a new port.
	for attempt := 1; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		err = s.startPostgres()
		if err == nil {
			return s, nil
		}
		if attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// startPostgres runs the postmaster as a child that gets SIGQUIT (PostgreSQL's immediate
// shutdown) if this test binary dies without Main's cleanup (a -timeout panic, a kill), and
// waits until it accepts connections.
func (s *server) startPostgres() error {
	logPath := filepath.Join(s.dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data(), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=32MB")
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if s.cred != nil {
		cmd.SysProcAttr.Credential = s.cred
		cmd.Env = append(cmd.Env, "HOME="+s.dir, "USER=postgres")
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.url("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			s.cmd, s.exited = cmd, exited
			return nil
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited at start (%v):\n%s", werr, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Signal(syscall.SIGQUIT)
			<-exited
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres not ready within 60s: %w\n%s", err, log)
		}
	}
}

// stop shuts the server down at once (SIGQUIT, PostgreSQL's immediate shutdown: its data is
// thrown away) and removes its directory.
func (s *server) stop() error {
	var err error
	if err = s.cmd.Process.Signal(syscall.SIGQUIT); err == nil {
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
			err = errors.New("postgres did not stop within 30s of SIGQUIT; killed")
		}
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

func (s *server) run(name string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
		cmd.Env = append(cmd.Env, "HOME="+s.dir, "USER=postgres")
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
