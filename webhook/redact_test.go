package webhook

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://hooks.example.com/convsvc", "https://hooks.example.com/convsvc"},
		{"https://hooks.example.com/convsvc-webhook-receiver/v2", "https://hooks.example.com/convsvc-webhook-receiver/v2"},
		{"https://hooks.example.com/hook?token=s3cr3t&x=1", "https://hooks.example.com/hook?REDACTED"},
		{"https://hooks.example.com/hook?", "https://hooks.example.com/hook?REDACTED"},
		{"https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghij0123456789ABCD", "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/REDACTED"},
		{"https://discord.com/api/webhooks/123456789012345678/Zx9_aB-cdEFghIJklMNopQRstUVwxYZ012345678", "https://discord.com/api/webhooks/REDACTED/REDACTED"},
		{"http://127.0.0.1:8080/in/0f8fad5b-d9cb-469f-a165-70867728950e/x", "http://127.0.0.1:8080/in/REDACTED/x"},
		{"https://h.example/abcdefghijklmnopqrstuvwxyzABCDEFGH", "https://h.example/REDACTED"},
		{"https://h.example/a%2Fb0123456789abcdef", "https://h.example/a%2Fb0123456789abcdef"},
		{"https://h.example/p#frag0123456789abcdef", "https://h.example/p"},
		{"https://user:pw@h.example/", "https://REDACTED@h.example/"},
		{"/relative/0123456789abcdef0123?q=1", "/relative/REDACTED?REDACTED"},
		{"https://h.example/%zz?token=1", "REDACTED"},
		{"", ""},
	} {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactURLs(t *testing.T) {
	in := `webhook: deliver evt_1: Post "https://h.example/hook/0123456789abcdefXYZ?sig=abc": context deadline exceeded; Location "HTTP://x.example/?k=v"`
	got := RedactURLs(in)
	want := `webhook: deliver evt_1: Post "https://h.example/hook/REDACTED?REDACTED": context deadline exceeded; Location "http://x.example/?REDACTED"`
	if got != want {
		t.Fatalf("RedactURLs =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(RedactURLs("no url here"), Redacted) {
		t.Fatal("text without a URL changed")
	}
}
