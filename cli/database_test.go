package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLI_ConfigMasksTheDatabasePassword: convsvc config shows a postgres:// --database with
// the password masked, whether it came from the flag, the environment or its _FILE twin, and
// says where the password comes from when CONVSVC_DATABASE_PASSWORD_FILE is set; the default
// is the bbolt file in the data dir.
func TestCLI_ConfigMasksTheDatabasePassword(t *testing.T) {
	data := t.TempDir()
	out, err := run(t, "config", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`--database\s+` + regexp.QuoteMeta(filepath.Join(data, "convsvc.db")) + `\s+default\s+CONVSVC_DATABASE, CONVSVC_DATABASE_FILE`).MatchString(out) {
		t.Errorf("default database:\n%s", out)
	}

	out, err = run(t, "config", "--database", "postgres://convsvc:s3cr3t@db.example:5432/convsvc?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "s3cr3t") || !regexp.MustCompile(`--database\s+postgres://convsvc:xxxxx@db\.example:5432/convsvc\?sslmode=disable\s+flag`).MatchString(out) {
		t.Errorf("flag:\n%s", out)
	}

	file := filepath.Join(t.TempDir(), "db-url")
	if err := os.WriteFile(file, []byte("postgres://convsvc@db.example/convsvc?password=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONVSVC_DATABASE_FILE", file)
	t.Setenv("CONVSVC_DATABASE_PASSWORD_FILE", "/run/secrets/pg")
	out, err = run(t, "config")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "hunter2") || !regexp.MustCompile(`--database\s+postgres://convsvc@db\.example/convsvc\?password=xxxxx \(password from CONVSVC_DATABASE_PASSWORD_FILE\)\s+env_file`).MatchString(out) {
		t.Errorf("env file:\n%s", out)
	}
}

// TestCLI_ServeOnPostgresNeedsAnAdminToken: serve refuses a PostgreSQL database without a
// configured admin token, before connecting, and says how to set one.
func TestCLI_ServeOnPostgresNeedsAnAdminToken(t *testing.T) {
	_, err := run(t, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--blob-listen", "127.0.0.1:0",
		"--database", "postgres://convsvc@127.0.0.1:1/convsvc")
	if err == nil || !strings.Contains(err.Error(), "--admin-token") || !strings.Contains(err.Error(), "CONVSVC_ADMIN_TOKEN_FILE") {
		t.Fatalf("err = %v", err)
	}
}
