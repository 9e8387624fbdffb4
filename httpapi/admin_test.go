package httpapi_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

type adminPage struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
	HasMore bool `json:"has_more"`
}

func pageIDs(p adminPage) []string {
	var ids []string
	for _, d := range p.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// walkPages follows a list from its first page with the given limit and returns every id and
// how many pages it took.
func walkPages(t *testing.T, e *testenv.Env, path string, limit int) (ids []string, pages int) {
	t.Helper()
	after := ""
	for {
		url := path + "?limit=" + strconv.Itoa(limit)
		if after != "" {
			url += "&starting_after=" + after
		}
		r := e.Do("GET", url, e.AdminToken, nil)
		must(t, r, 200, "")
		var p adminPage
		r.JSON(t, &p)
		pages++
		if len(p.Data) > limit {
			t.Fatalf("%s: %d items for limit %d", url, len(p.Data), limit)
		}
		ids = append(ids, pageIDs(p)...)
		if !p.HasMore {
			return ids, pages
		}
		if len(p.Data) == 0 {
			t.Fatalf("%s: has_more with an empty page", url)
		}
		after = p.Data[len(p.Data)-1].ID
	}
}

// The admin lists page like the job list: limit, starting_after, has_more; the default page
// is 20; the client's Accounts and Keys follow every page.
func TestAPI_AdminListsPage(t *testing.T) {
	e := testenv.Start(t)
	want := []string{e.AccountID}
	for range 24 {
		id, _ := e.NewAccount(5)
		want = append(want, id)
	}
	got, pages := walkPages(t, e, "/v1/admin/accounts", 10)
	if pages != 3 || !slices.Equal(got, want) {
		t.Fatalf("accounts in %d pages: %v, want 3 pages of %v", pages, got, want)
	}
	r := e.Do("GET", "/v1/admin/accounts", e.AdminToken, nil)
	must(t, r, 200, "")
	var first adminPage
	r.JSON(t, &first)
	if len(first.Data) != 20 || !first.HasMore || !slices.Equal(pageIDs(first), want[:20]) {
		t.Fatalf("default page: %d accounts, has_more %v", len(first.Data), first.HasMore)
	}
	must(t, e.Do("GET", "/v1/admin/accounts?limit=0", e.AdminToken, nil), 400, "invalid_request")
	must(t, e.Do("GET", "/v1/admin/accounts?limit=101", e.AdminToken, nil), 400, "invalid_request")
	must(t, e.Do("GET", "/v1/admin/accounts?starting_after=acct_nope", e.AdminToken, nil), 400, "invalid_request")

	acct := want[1]
	keys := []string{}
	for range 5 {
		r := e.Do("POST", "/v1/admin/accounts/"+acct+"/keys", e.AdminToken, nil)
		must(t, r, 200, "")
		keys = append(keys, r.Map(t)["id"].(string))
	}
	// NewAccount made one key first.
	gotKeys, pages := walkPages(t, e, "/v1/admin/accounts/"+acct+"/keys", 2)
	if pages != 3 || len(gotKeys) != 6 || !slices.Equal(gotKeys[1:], keys) {
		t.Fatalf("keys in %d pages: %v, want 3 pages ending %v", pages, gotKeys, keys)
	}
	must(t, e.Do("GET", "/v1/admin/accounts/"+acct+"/keys?starting_after=key_nope", e.AdminToken, nil), 400, "invalid_request")
	must(t, e.Do("GET", "/v1/admin/accounts/acct_nope/keys?limit=2", e.AdminToken, nil), 404, "not_found")

	c := &client.Client{BaseURL: e.URL, Key: e.AdminToken, HTTP: e.HTTP}
	all, err := c.Accounts(context.Background())
	if err != nil || len(all) != len(want) || all[0].ID != want[0] || all[len(all)-1].ID != want[len(want)-1] {
		t.Fatalf("client.Accounts: %d accounts, err %v", len(all), err)
	}
	page, err := c.AccountsPage(context.Background(), client.PageOptions{Limit: 5, StartingAfter: want[19]})
	if err != nil || len(page.Data) != 5 || page.HasMore || page.Data[0].ID != want[20] {
		t.Fatalf("client.AccountsPage: %+v %v", page, err)
	}
	allKeys, err := c.Keys(context.Background(), acct)
	if err != nil || len(allKeys) != 6 {
		t.Fatalf("client.Keys: %d keys, err %v", len(allKeys), err)
	}
}
