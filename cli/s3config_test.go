package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLI_ConfigShowsS3MaskedAndDefaultsUnchanged: with no flags object storage is the blob
// store in the data dir and no S3 credential is shown; with --object-storage s3://... convsvc
// config shows the bucket, the endpoint, path style resolved (auto: on with an endpoint), the
// region from AWS_REGION, and the credentials from the AWS variables and their _FILE twins
// masked (the access key id keeps its first four characters).
func TestCLI_ConfigShowsS3MaskedAndDefaultsUnchanged(t *testing.T) {
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
		"AWS_ACCESS_KEY_ID_FILE", "AWS_SECRET_ACCESS_KEY_FILE", "AWS_SESSION_TOKEN_FILE"} {
		t.Setenv(v, "") // registered for restore, then removed: the test sets exactly what it needs
		os.Unsetenv(v)
	}
	data := t.TempDir()
	out, err := run(t, "config", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`--object-storage\s+\(blob store in `+regexp.QuoteMeta(filepath.Join(data, "blobs"))+`\)\s+default\s+CONVSVC_OBJECT_STORAGE`).MatchString(out) ||
		strings.Contains(out, "s3-access-key-id") || strings.Contains(out, "--s3-") || !strings.Contains(out, "--blob-listen") {
		t.Errorf("defaults:\n%s", out)
	}

	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY_FILE", secretFile)
	t.Setenv("AWS_REGION", "eu-central-1")
	t.Setenv("CONVSVC_S3_ENDPOINT", "http://minio:9000")
	out, err = run(t, "config", "--object-storage", "s3://files/convsvc")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "--blob-") {
		t.Errorf("with S3, config shows the built-in object storage's flags:\n%s", out)
	}
	for _, re := range []string{
		`--object-storage\s+s3://files/convsvc\s+flag\s+CONVSVC_OBJECT_STORAGE`,
		`--s3-endpoint\s+http://minio:9000\s+env\s+CONVSVC_S3_ENDPOINT`,
		`--s3-region\s+eu-central-1\s+env\s+CONVSVC_S3_REGION, AWS_REGION`,
		`--s3-path-style\s+auto \(true\)\s+default`,
		`\(s3-access-key-id\)\s+AKIA\*{8}\s+env\s+AWS_ACCESS_KEY_ID, AWS_ACCESS_KEY_ID_FILE`,
		`\(s3-secret-access-key\)\s+\*{8}\s+env_file\s+AWS_SECRET_ACCESS_KEY, AWS_SECRET_ACCESS_KEY_FILE`,
		`\(s3-session-token\)\s+\(none\)\s+default`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no line matches %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "IOSFODNN7EXAMPLE") || strings.Contains(out, "wJalrXUtnFEMI") {
		t.Errorf("a credential is shown:\n%s", out)
	}

	if _, err := run(t, "config", "--object-storage", "gs://files"); err == nil || !strings.Contains(err.Error(), "--object-storage") {
		t.Errorf("gs:// accepted: %v", err)
	}
	if _, err := run(t, "config", "--object-storage", "s3://files", "--s3-path-style", "maybe"); err == nil || !strings.Contains(err.Error(), "--s3-path-style") {
		t.Errorf("--s3-path-style maybe accepted: %v", err)
	}
}
