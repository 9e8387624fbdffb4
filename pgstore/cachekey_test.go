package pgstore_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestCacheKey_SQLIsGo: the cache key is computed twice, by convsvc_cache_key in PL/pgSQL
// (the transition functions of migration 0019) and by store.CacheKeyOf in Go (the Go
// transactions, bbolt, the API's check of a cached output), and a job keyed by one must be
// found by the other. Called on a real PostgreSQL with many bases and input hashes (empty
// ones, which take the job out of the cache: NULL and ""; text in every script, emoji,
// combining marks, controls, quotes and backslashes; options of up to 1 MiB; random text),
// the function gives Go's key for each, in a session with the server's settings and in one
// with standard_conforming_strings off (set for a database after its migrations: 0019's
// function read its '\x00' as an escape there and failed on every key, 22021, until 0021).
// Text PostgreSQL cannot hold (a NUL byte, invalid UTF-8) never reaches the function: no job
// row holds it.
func TestCacheKey_SQLIsGo(t *testing.T) {
	if testing.Short() {
		t.Skip("SQL alone, no Go concurrency: the plain run covers it")
	}
	url := testpg.NewDatabase(t)
	open(t, url, pgstore.Options{})
	ctx := context.Background()

	bases := []string{"", "png>gif", "convsvc-cache/1\x01account:acct_x", strings.Repeat("0123456789abcdef", 4),
		"ünïcødé", "日本語のオプション", "🎞️🖼️ 👩‍👩‍👧", "e\u0301\u0327", "مرحبا بالعالم", "\u2028\u2029\ufeff\ufffd", "\U0010fffd",
		"a\tb\nc\rd", `'quoted' "double" \backslash \x00 \\000 %s %`, "\x7f\x01\x1f",
		`{"quality":80,"resize":{"width":1200,"fit":"contain"},"strip":true}`,
		strings.Repeat(`{"k":"välue"},`, 10000), strings.Repeat("x", 1<<20)}
	shas := []string{"", strings.Repeat("ab", 32), strings.Repeat("AB", 32), "not-hex", "ß", "\\x00"}
	var pairs [][2]string
	for _, b := range bases {
		for _, s := range shas {
			pairs = append(pairs, [2]string{b, s})
		}
	}
	r := rand.New(rand.NewPCG(35, 21))
	for range 500 {
		pairs = append(pairs, [2]string{randomText(r, r.IntN(300)), randomText(r, r.IntN(80))})
	}

	for _, setting := range []string{"", "SET standard_conforming_strings = off"} {
		conn := connect(t, url)
		if setting != "" {
			if _, err := conn.Exec(ctx, setting); err != nil {
				t.Fatal(err)
			}
		}
		b, s := make([]string, len(pairs)), make([]string, len(pairs))
		for i, p := range pairs {
			b[i], s[i] = p[0], p[1]
		}
		rows, err := conn.Query(ctx, `SELECT convsvc_cache_key(b, s) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY u (b, s, i) ORDER BY i`, b, s)
		if err != nil {
			t.Fatalf("%q: %v", setting, err)
		}
		var got []*string
		for rows.Next() {
			var k *string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			got = append(got, k)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%q: %v", setting, err)
		}
		if len(got) != len(pairs) {
			t.Fatalf("%q: %d keys for %d pairs", setting, len(got), len(pairs))
		}
		for i, p := range pairs {
			want := store.CacheKeyOf(store.Job{CacheBase: p[0], InputSHA256: p[1]})
			if g := deref(got[i]); g != want {
				t.Errorf("%q: convsvc_cache_key(%.40q, %.40q) = %q, Go's is %q", setting, p[0], p[1], g, want)
			}
		}
		// NULL is "" (a job row without the column).
		var k *string
		if err := conn.QueryRow(ctx, `SELECT convsvc_cache_key(NULL, $1)`, shas[1]).Scan(&k); err != nil || k != nil {
			t.Errorf("%q: convsvc_cache_key(NULL, sha) = %q, %v; want NULL", setting, deref(k), err)
		}
		if err := conn.QueryRow(ctx, `SELECT convsvc_cache_key($1, NULL)`, bases[1]).Scan(&k); err != nil || k != nil {
			t.Errorf("%q: convsvc_cache_key(base, NULL) = %q, %v; want NULL", setting, deref(k), err)
		}
	}
}

// randomText is n random characters from every plane PostgreSQL's text holds (no NUL, no
// surrogates), ASCII most often.
func randomText(r *rand.Rand, n int) string {
	var sb strings.Builder
	for range n {
		var c rune
		switch r.IntN(4) {
		case 0, 1:
			c = rune(1 + r.IntN(0x7f))
		case 2:
			c = rune(0x80 + r.IntN(0xffff-0x80))
		default:
			c = rune(0x10000 + r.IntN(utf8.MaxRune-0x10000))
		}
		if !utf8.ValidRune(c) {
			c = '?'
		}
		sb.WriteRune(c)
	}
	return sb.String()
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
