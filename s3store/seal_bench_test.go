package s3store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/blobstore/blobtest"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/s3store"
)

// BenchmarkSealParallel measures a job's S3 requests on the test server (versitygw) from 32
// goroutines, as bench/scaleout's 32 clients do, with -benchtime jobs in the bucket: a start's
// Seal (HeadObject + CopyObject), its HeadObject alone, and the input cleanup after the job
// (DeleteInput). It reports the server's CPU milliseconds per operation when it runs the
// server itself (tests3's local versitygw).
//
//	go test ./s3store -run '^$' -bench SealParallel -benchtime 2000x
func BenchmarkSealParallel(b *testing.B) {
	bk := tests3.NewBucket(b, tests3.Options{})
	st, err := s3store.New(s3store.Options{
		Endpoint: bk.Endpoint, Region: bk.Region, Bucket: bk.Name, Prefix: "bench",
		AccessKey: bk.AccessKey, SecretKey: bk.SecretKey, PathStyle: true, ScratchDir: b.TempDir(),
	})
	if err != nil {
		b.Fatal(err)
	}
	data := blobtest.RandomBytes(300)
	var ids []string // uploaded, not yet sealed
	var sealed []string
	for _, bc := range []struct {
		name string
		op   func(id string) error
	}{
		{"Head", func(id string) error {
			_, err := st.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bk.Name), Key: aws.String(st.UploadKey(id))})
			return err
		}},
		{"Seal", func(id string) error { return st.Seal(id, func(s3store.UploadInfo) error { return nil }) }},
		{"DeleteInput", st.DeleteInput},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var todo []string
			switch bc.name {
			case "Head", "Seal":
				for len(ids) < b.N {
					id := blobtest.NewJobID()
					u, err := st.UploadURL(id, int64(len(data)), time.Now().Add(10*time.Minute))
					if err != nil {
						b.Fatal(err)
					}
					if r := blobtest.Put(b, u, data); r.Status != 200 {
						b.Fatalf("PUT: %d %s", r.Status, r.Body)
					}
					ids = append(ids, id)
				}
				todo = ids[:b.N]
				if bc.name == "Seal" {
					sealed, ids = ids[:b.N], ids[b.N:]
				}
			case "DeleteInput":
				if len(sealed) < b.N {
					b.Skipf("%d sealed jobs, want %d", len(sealed), b.N)
				}
				todo = sealed[:b.N]
			}
			var next atomic.Int64
			cpu0 := procCPU(bk.Pid)
			b.SetParallelism(16) // 32 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := bc.op(todo[next.Add(1)-1]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if bk.Pid > 0 {
				b.ReportMetric(1000*(procCPU(bk.Pid)-cpu0)/float64(b.N), "server-cpu-ms/op")
			}
		})
	}
}

// procCPU is the user+system CPU seconds of the process so far (0 when unknown).
func procCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100
}
