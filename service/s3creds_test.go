package service_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// credentialEnv clears every variable of the AWS default chain, points the shared files into
// a temp dir and IMDS at a closed loopback port, so only what a test sets is found. It
// returns the path of the shared credentials file (which the test writes).
func credentialEnv(t *testing.T) string {
	t.Helper()
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_EC2_METADATA_DISABLED",
		"AWS_ACCESS_KEY_ID_FILE", "AWS_SECRET_ACCESS_KEY_FILE"} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", conf)
	creds := filepath.Join(dir, "credentials")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", closed)
	return creds
}

// s3NoKeys is testenv.S3 with the static keys removed, so the default chain supplies them;
// it returns the bucket's keys.
func s3NoKeys(t *testing.T) (opt func(*service.Config), access, secret string) {
	s3 := testenv.S3(t)
	var c service.Config
	s3(&c)
	return func(cfg *service.Config) {
		s3(cfg)
		cfg.S3.AccessKey, cfg.S3.SecretKey = "", ""
	}, c.S3.AccessKey, c.S3.SecretKey
}

func writeProfile(t *testing.T, path, profile, access, secret string) {
	t.Helper()
	body := "[" + profile + "]\naws_access_key_id = " + access + "\naws_secret_access_key = " + secret + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func convertPNG(t *testing.T, e *testenv.Env) {
	t.Helper()
	if j := e.Convert(e.Key, "png", "jpeg", testenv.Sample(t, "images/sample.png")); j.Status != "succeeded" {
		t.Fatalf("job %s %s %s", j.Status, deref((*string)(j.ErrorCode)), deref(j.ErrorMessage))
	}
}

// TestS3_CredentialsFromProfile: with no AWS variables, the keys come from the profile that
// AWS_PROFILE names in AWS_SHARED_CREDENTIALS_FILE.
func TestS3_CredentialsFromProfile(t *testing.T) {
	creds := credentialEnv(t)
	opt, access, secret := s3NoKeys(t)
	writeProfile(t, creds, "convsvc-test", access, secret)
	t.Setenv("AWS_PROFILE", "convsvc-test")
	convertPNG(t, testenv.Start(t, opt))
}

// TestS3_CredentialsEnvBeforeProfile: the AWS variables win over a profile (whose keys here
// are wrong).
func TestS3_CredentialsEnvBeforeProfile(t *testing.T) {
	creds := credentialEnv(t)
	opt, access, secret := s3NoKeys(t)
	writeProfile(t, creds, "convsvc-test", access, "not-the-secret")
	t.Setenv("AWS_PROFILE", "convsvc-test")
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	convertPNG(t, testenv.Start(t, opt))
}

// TestS3_CredentialsFromContainerEndpoint: the ECS container credentials endpoint (a real
// loopback listener playing it) supplies the keys, and is asked with its authorization token.
func TestS3_CredentialsFromContainerEndpoint(t *testing.T) {
	credentialEnv(t)
	opt, access, secret := s3NoKeys(t)
	var asked, refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/creds" || r.Header.Get("Authorization") != "task-token" {
			refused.Add(1)
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		asked.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"AccessKeyId": access, "SecretAccessKey": secret, "Token": "",
			"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	defer srv.Close()
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/creds")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "task-token")
	convertPNG(t, testenv.Start(t, opt))
	if asked.Load() == 0 || refused.Load() != 0 {
		t.Fatalf("container endpoint asked %d times, refused %d", asked.Load(), refused.Load())
	}
}

// TestS3_CredentialsErrors: a profile that does not exist, and no credentials anywhere (IMDS
// unreachable), stop start-up with an error naming the profile, or the sources tried.
func TestS3_CredentialsErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile string
		want    []string
	}{
		{"missing profile", "no-such-profile", []string{"no-such-profile"}},
		{"nothing anywhere", "", []string{"no S3 credentials (tried", "AWS_ACCESS_KEY_ID", "profile \"default\"", "web identity: unset", "ECS container credentials: unset", "IMDS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			creds := credentialEnv(t)
			opt, access, secret := s3NoKeys(t)
			writeProfile(t, creds, "other", access, secret)
			t.Setenv("AWS_PROFILE", tc.profile)
			cfg := service.Config{
				DataDir: filepath.Join(t.TempDir(), "data"), Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0",
				Workers: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			}
			opt(&cfg)
			m, err := service.Run(cfg)
			if err == nil {
				_ = m.Shutdown(t.Context())
				t.Fatal("started without credentials")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
