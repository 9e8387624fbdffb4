package webhook

import (
	"net/url"
	"strings"
)

// Redacted replaces what RedactURL hides.
const Redacted = "REDACTED"

// RedactURL returns raw as logs and delivery records show it: scheme, host and port as they
// are; the query (often a token: ?key=..., ?sig=...) as "?REDACTED"; the fragment and any
// user:password@ dropped; and each path segment that looks like a secret (a token, a key, a
// signature: see secretSegment) as "REDACTED". A string that does not parse as a URL is
// REDACTED whole. Every log line and stored error that names a webhook URL goes through it.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return Redacted
	}
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme)
		b.WriteString(":")
	}
	if u.Host != "" || u.Scheme != "" {
		b.WriteString("//")
		if u.User != nil {
			b.WriteString(Redacted + "@")
		}
		b.WriteString(u.Host)
	}
	segs := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segs {
		if un, err := url.PathUnescape(seg); err == nil && secretSegment(un) {
			segs[i] = Redacted
		}
	}
	b.WriteString(strings.Join(segs, "/"))
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + Redacted)
	}
	return b.String()
}

// RedactURLs replaces every URL RedactURL would change inside text (an error message that
// quotes the URL it failed on, such as net/http's `Post "https://...": ...`) by its redacted
// form. A URL is an http:// or https:// run up to a space or a quote.
func RedactURLs(text string) string {
	var b strings.Builder
	for {
		i := indexURL(text)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		text = text[i:]
		end := strings.IndexAny(text, " \t\r\n\"'<>`")
		if end < 0 {
			end = len(text)
		}
		b.WriteString(RedactURL(text[:end]))
		text = text[end:]
	}
}

// indexURL is the first index of "http://" or "https://" in s (any case), or -1.
func indexURL(s string) int {
	lower := strings.ToLower(s)
	i, j := strings.Index(lower, "http://"), strings.Index(lower, "https://")
	switch {
	case i < 0:
		return j
	case j < 0 || i < j:
		return i
	}
	return j
}

// secretSegment reports whether a path segment looks like a secret rather than a name: at
// least 16 characters of the alphabets tokens are written in (letters, digits, - _ . ~ + =
// and %), with a digit among them, or at least 32 such characters whatever they are (a long
// random token of letters only). "hooks", "convsvc-webhook-receiver" and "v2" stay; a Slack or
// Discord token, a UUID, a hex digest or a base64 key does not.
func secretSegment(s string) bool {
	if len(s) < 16 {
		return false
	}
	digit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', strings.IndexByte("-_.~+=%", c) >= 0:
		default:
			return false
		}
	}
	return digit || len(s) >= 32
}
