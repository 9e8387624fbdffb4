package httpapi_test

import (
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// backendSuite is the part of the API suite that holds for every job database: the same test
// functions, the same assertions, run once per backend by TestAPI_Backends. (The whole suite
// also runs against PostgreSQL with CONVSVC_TEST_DATABASE=postgres.)
var backendSuite = []struct {
	name string
	test func(*testing.T)
}{
	{"CreateJob_Reservation", TestAPI_CreateJob_Reservation},
	{"CreateJob_Errors", TestAPI_CreateJob_Errors},
	{"Auth", TestAPI_Auth},
	{"OtherAccountsJobIsNotFound", TestAPI_OtherAccountsJobIsNotFound},
	{"LimitReached", TestAPI_LimitReached},
	{"ConcurrentCreatesReserveExactlyCap", TestAPI_ConcurrentCreatesReserveExactlyCap},
	{"RateLimit", TestAPI_RateLimit},
	{"StartJob", TestAPI_StartJob},
	{"JobSucceedsWithOutput", TestAPI_JobSucceedsWithOutput},
	{"ConversionFailureReleasesReservation", TestAPI_ConversionFailureReleasesReservation},
	{"Cancel", TestAPI_Cancel},
	{"CancelRunningStopsConversion", TestAPI_CancelRunningStopsConversion},
	{"Idempotency", TestAPI_Idempotency},
	{"GetJobWait", TestAPI_GetJobWait},
	{"ListJobs", TestAPI_ListJobs},
	{"Admin", TestAPI_Admin},
	{"Presets", TestAPI_Presets},
	{"RetentionExpiresJobs", TestAPI_RetentionExpiresJobs},
	{"Batch_Lifecycle", TestAPI_Batch_Lifecycle},
	{"Batch_OpenArchive", TestAPI_Batch_OpenArchive},
	{"Batch_Errors", TestAPI_Batch_Errors},
	{"JobEvents", TestAPI_JobEvents},
	{"JobEvents_FinishedBetweenReads", TestAPI_JobEvents_FinishedBetweenReads},
	{"AccountEvents", TestAPI_AccountEvents},
}

// TestAPI_Backends runs backendSuite against bbolt and against PostgreSQL (internal/testing/testpg:
// skipped when PostgreSQL is not installed, except under CI=true), after checking that the
// service really runs on the backend the subtest names.
func TestAPI_Backends(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres", "postgres+s3"} {
		t.Run(backend, func(t *testing.T) {
			db, objects, _ := strings.Cut(backend, "+")
			t.Setenv(testenv.EnvDatabase, db)
			t.Setenv(testenv.EnvObjectStorage, objects)
			t.Run("RunsOnBackend", func(t *testing.T) {
				e := testenv.Start(t)
				switch st := e.Main.JobStore().(type) {
				case *pgstore.Store:
					if db != "postgres" {
						t.Fatalf("%s: the service runs on PostgreSQL", backend)
					}
				case *store.Store:
					if backend != "bbolt" {
						t.Fatalf("%s: the service runs on bbolt", backend)
					}
				default:
					t.Fatalf("unknown job store %T", st)
				}
				if got := e.Main.BlobURL() == ""; got != (objects == "s3") {
					t.Fatalf("%s: local blob listener %q", backend, e.Main.BlobURL())
				}
			})
			if testing.Short() && backend != "postgres+s3" {
				// The -race -short run takes the suite once more only on PostgreSQL with S3: its
				// tests run on bbolt with local files as top-level tests already, and the plain
				// run also takes PostgreSQL with local files.
				return
			}
			for _, tc := range backendSuite {
				t.Run(tc.name, tc.test)
			}
		})
	}
}
