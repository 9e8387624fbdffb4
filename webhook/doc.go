// Package webhook signs, verifies and delivers convsvc's webhook events: the
// Convsvc-Signature scheme (HMAC-SHA256 over the raw body, with a timestamp), a guard that
// refuses destinations inside private networks at registration and again at connect time,
// an HTTP sender that never follows redirects, and the retry schedule a dispatcher uses.
//
// It imports nothing of the project, so a receiver written in Go can use Verify alone:
//
//	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
//	err := webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance)
//
// docs/webhooks.md describes the events, the headers and the delivery guarantees.
package webhook
