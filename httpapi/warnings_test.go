package httpapi_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestWarningCodes_Agree: the OpenAPI document's WarningCode enum, the kernel's list and the
// client's constants name the same codes in the same order.
func TestWarningCodes_Agree(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components.Schemas["WarningCode"].Enum; !slices.Equal(got, convert.WarningCodes) {
		t.Errorf("openapi.json WarningCode enum = %q, want convert.WarningCodes %q", got, convert.WarningCodes)
	}
	clientCodes := []client.WarningCode{
		client.WarnSheetsDropped, client.WarnGlyphsMissing, client.WarnTextNotRendered, client.WarnMetadataDropped,
		client.WarnColorProfileDropped, client.WarnAnimationDropped, client.WarnAlphaDropped, client.WarnBitDepthReduced,
		client.WarnImagesDropped, client.WarnLinksDropped,
		client.WarnFormattingDropped, client.WarnPermissionsDropped, client.WarnPagesDropped, client.WarnImageResized,
		client.WarnQualityReduced,
	}
	var got []string
	for _, c := range clientCodes {
		got = append(got, string(c))
	}
	if !slices.Equal(got, convert.WarningCodes) {
		t.Errorf("client warning codes = %q, want %q", got, convert.WarningCodes)
	}
}

// convertWithOptions runs a job with options through the whole flow and returns it finished,
// and the body of its final read.
func convertWithOptions(t *testing.T, e *testenv.Env, input, target string, opts map[string]any, data []byte) (client.Job, string) {
	t.Helper()
	req := map[string]any{"input_format": input, "target_format": target, "input_bytes": len(data)}
	if opts != nil {
		req["options"] = opts
	}
	r := e.Do("POST", "/v1/jobs", e.Key, req)
	must(t, r, 200, "")
	var res testenv.Reservation
	r.JSON(t, &res)
	must(t, e.Upload(res.UploadURL, data), 200, "")
	must(t, e.Start(e.Key, res.Job.ID), 200, "")
	job := e.WaitFinished(e.Key, res.Job.ID)
	r = e.Do("GET", "/v1/jobs/"+job.ID, e.Key, nil)
	must(t, r, 200, "")
	return job, string(r.Body)
}

// TestAPI_OutputWarnings: a workbook of three sheets converted without the sheet option
// succeeds, and the job's output says which sheets were left out; with the option nothing is
// dropped, and a sheet the workbook lacks fails the job naming the sheets it has.
func TestAPI_OutputWarnings(t *testing.T) {
	e := testenv.Start(t)
	data := testenv.Sample(t, "data/sample-sheets.xlsx")

	job, body := convertWithOptions(t, e, "xlsx", "csv", nil, data)
	want := []client.Warning{{Code: client.WarnSheetsDropped,
		Message: `the workbook has 3 sheets; only the first, "Books", was converted, not "Costs", "Notes & ideas" (choose one with the sheet option)`}}
	if job.Status != client.StatusSucceeded || job.Output == nil || !reflect.DeepEqual(job.Output.Warnings, want) {
		t.Fatalf("job %+v output %+v, want succeeded with %+v", job, job.Output, want)
	}
	if !strings.Contains(body, `"warnings":[{"code":"sheets_dropped","message":"the workbook has 3 sheets; only the first, \"Books\", was converted, not \"Costs\", \"Notes & ideas\" (choose one with the sheet option)"}]`) {
		t.Errorf("job JSON %s lacks the warning", body)
	}

	job, body = convertWithOptions(t, e, "xlsx", "csv", map[string]any{"sheet": "Costs"}, data)
	if job.Status != client.StatusSucceeded || job.Output == nil || job.Output.Warnings == nil || len(job.Output.Warnings) != 0 ||
		!strings.Contains(body, `"warnings":[]`) || job.Options == nil || job.Options.Sheet != "Costs" {
		t.Fatalf("sheet Costs: %s", body)
	}

	job, _ = convertWithOptions(t, e, "xlsx", "csv", map[string]any{"sheet": "Summary"}, data)
	if job.Status != client.StatusFailed || job.ErrorCode == nil || *job.ErrorCode != client.CodeConversionFailed || job.ErrorMessage == nil ||
		*job.ErrorMessage != `options.sheet: the workbook has no sheet named "Summary" (its sheets: "Books", "Costs", "Notes & ideas")` {
		t.Fatalf("sheet Summary: %+v", job)
	}

	// The option belongs to xlsx inputs; anything else is refused at create.
	r := e.Do("POST", "/v1/jobs", e.Key, map[string]any{"input_format": "csv", "target_format": "json", "input_bytes": 10, "options": map[string]any{"sheet": "Costs"}})
	must(t, r, 400, "invalid_request")
	if !strings.Contains(string(r.Body), "options.sheet: only applies when the input is xlsx") {
		t.Errorf("create with sheet for csv: %s", r.Body)
	}
}
