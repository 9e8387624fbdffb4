package httpapi_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestAPI_ExactQueryAndAuthorization: the members of issue 18's exact-JSON class outside the
// body. A query parameter given twice, a malformed query, and two Authorization headers are
// refused, since a proxy and the server could each read a different one (net/url takes the
// first of a repeated parameter and silently drops a pair with a semicolon).
func TestAPI_ExactQueryAndAuthorization(t *testing.T) {
	e := testenv.Start(t)
	res := e.Create(e.Key, "png", "jpeg", 10)
	must(t, e.Do("GET", "/v1/jobs?limit=1", e.Key, nil), 200, "")
	must(t, e.Do("GET", "/v1/jobs?limit=1&limit=100", e.Key, nil), 400, "invalid_request")
	must(t, e.Do("GET", "/v1/jobs?status=created&status=failed", e.Key, nil), 400, "invalid_request")
	must(t, e.Do("GET", "/v1/jobs?limit=100;limit=1", e.Key, nil), 400, "invalid_request")
	must(t, e.Do("GET", "/v1/jobs?limit=%zz", e.Key, nil), 400, "invalid_request")
	must(t, e.Do("GET", "/v1/jobs/"+res.Job.ID+"?wait=0", e.Key, nil), 200, "")
	must(t, e.Do("GET", "/v1/jobs/"+res.Job.ID+"?wait=0&wait=60", e.Key, nil), 400, "invalid_request")

	req, err := http.NewRequest("GET", e.URL+"/v1/jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Authorization", "Bearer "+e.Key)
	req.Header.Add("Authorization", "Bearer cs_live_someoneelse")
	resp, err := e.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	must(t, testenv.Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}, 401, "unauthorized")
}
