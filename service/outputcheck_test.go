package service_test

import (
	"context"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/promtext"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestOutputCheck_FailsJob holds issue 35 item 2 through the service on both stores: a
// conversion whose output fails its re-read check (a converter that writes half a PNG) ends
// failed with error_code conversion_failed and error_reason output_invalid, its cent released
// and nothing spent, counted in /metrics; a good output succeeds with output.verified true
// and its sha256.
func TestOutputCheck_FailsJob(t *testing.T) {
	backends := []struct {
		name string
		opts func(t *testing.T) []func(*service.Config)
	}{
		{"bbolt", func(*testing.T) []func(*service.Config) { return nil }},
		{"postgres+s3", func(t *testing.T) []func(*service.Config) {
			return []func(*service.Config){testenv.Postgres(t), testenv.S3(t)}
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := testenv.Start(t, b.opts(t)...)
			cat := e.Main.Catalog()
			cat.AddFormat(convert.Format{ID: "cut-png", Name: "PNG cut in half", Category: convert.CategoryImage, Extensions: []string{"cutpng"}, MIME: "application/octet-stream"})
			cat.AddConverter(convert.Converter{From: "cut-png", To: "png", Run: func(_ context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
				_, err := io.CopyN(out, in, in.Size()/2)
				return err
			}})
			png := testenv.Sample(t, "images/sample.png")

			j := e.Convert(e.Key, "cut-png", "png", png)
			if j.Status != "failed" || j.ErrorCode == nil || string(*j.ErrorCode) != "conversion_failed" ||
				j.ErrorReason == nil || *j.ErrorReason != convert.ReasonOutputInvalid || j.Output != nil {
				t.Fatalf("job with a cut output: %s (reason %v)", j.Error(), j.ErrorReason)
			}
			if a := e.Account(e.AccountID); a["reserved_cents"] != 0.0 || a["spent_cents"] != 0.0 {
				t.Fatalf("account after the failed check: reserved %v spent %v, want 0 and 0", a["reserved_cents"], a["spent_cents"])
			}

			ok := e.Convert(e.Key, "png", "jpeg", png)
			if ok.Status != "succeeded" || ok.Output == nil || !ok.Output.Verified || len(ok.Output.SHA256) != 64 {
				t.Fatalf("good job: %s %+v", ok.Error(), ok.Output)
			}
			if got := e.Get(e.Key, ok.ID, 0); got.Output == nil || !got.Output.Verified {
				t.Fatalf("good job read back: %+v", got.Output)
			}
			if a := e.Account(e.AccountID); a["reserved_cents"] != 0.0 || a["spent_cents"] != 1.0 {
				t.Fatalf("account after the good job: reserved %v spent %v, want 0 and 1", a["reserved_cents"], a["spent_cents"])
			}

			// Outcomes are counted after their finish commits: wait for both counts.
			m := e.ScrapeUntil(func(m promtext.Metrics) bool {
				return m.Value("convsvc_output_checks_total", "target", "png", "result", "invalid") > 0 &&
					m.Value("convsvc_output_checks_total", "target", "jpeg", "result", "verified") > 0
			})
			if v := m.Value("convsvc_output_checks_total", "target", "png", "result", "invalid"); v != 1 {
				t.Fatalf("convsvc_output_checks_total{target=png,result=invalid} = %v, want 1", v)
			}
			if v := m.Value("convsvc_output_checks_total", "target", "jpeg", "result", "verified"); v != 1 {
				t.Fatalf("convsvc_output_checks_total{target=jpeg,result=verified} = %v, want 1", v)
			}
		})
	}
}
