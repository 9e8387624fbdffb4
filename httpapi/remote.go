package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// Limits on create's remote-file fields (docs/remote.md).
const (
	// maxRemoteURL bounds source_url and deliver_to.url.
	maxRemoteURL = 4096
	// maxDeliverHeaders bounds how many headers deliver_to carries.
	maxDeliverHeaders = 32
	// maxDeliverHeader bounds one header's name plus value.
	maxDeliverHeader = 8192
)

// deliverToRequest is create's deliver_to: where the output is PUT after the conversion.
type deliverToRequest struct {
	URL     *string           `json:"url"`
	Headers map[string]string `json:"headers"`
}

// deliverView is a job's deliver_to as the API shows it: the URL redacted (its query, where
// presigned URLs carry their signature) and each header's value hidden.
type deliverView struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// reservedDeliverHeaders are set by the transfer itself; deliver_to may not name them.
var reservedDeliverHeaders = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"expect": true, "te": true, "trailer": true, "upgrade": true, "keep-alive": true,
	"proxy-authorization": true, "proxy-connection": true,
}

// checkRemoteURL checks the form of a source_url or deliver_to.url at create: an absolute
// http or https URL with a host and no user:password@. Its address is checked where the
// connection is made, by the worker that fetches or delivers (the job then fails
// source_refused or delivery_failed).
func checkRemoteURL(field, raw string) error {
	if raw == "" {
		return errorf(CodeInvalidRequest, field+" must be an http or https URL")
	}
	if len(raw) > maxRemoteURL {
		return errorf(CodeInvalidRequest, field+" is longer than "+strconv.Itoa(maxRemoteURL)+" characters")
	}
	// AllowPrivate: only the form is checked here, without resolving the host.
	if err := (webhook.Guard{AllowPrivate: true}).CheckURL(context.Background(), raw); err != nil {
		return &Error{Code: CodeInvalidRequest, Message: field + ": " + webhook.Refusal(err), Err: errors.New(webhook.RedactURLs(err.Error()))}
	}
	return nil
}

// checkDeliverTo validates create's deliver_to and returns it as the store keeps it.
func checkDeliverTo(d *deliverToRequest) (*store.Delivery, error) {
	if d == nil {
		return nil, nil
	}
	if d.URL == nil {
		return nil, errorf(CodeInvalidRequest, "deliver_to.url is required: the URL the output is PUT to (a presigned upload URL)")
	}
	if err := checkRemoteURL("deliver_to.url", *d.URL); err != nil {
		return nil, err
	}
	if len(d.Headers) > maxDeliverHeaders {
		return nil, errorf(CodeInvalidRequest, fmt.Sprintf("deliver_to.headers has %d headers, at most %d", len(d.Headers), maxDeliverHeaders))
	}
	out := &store.Delivery{URL: *d.URL}
	for name, value := range d.Headers {
		switch {
		case !validHeaderName(name):
			return nil, errorf(CodeInvalidRequest, fmt.Sprintf("deliver_to.headers: %q is not a valid header name", name))
		case reservedDeliverHeaders[strings.ToLower(name)]:
			return nil, errorf(CodeInvalidRequest, fmt.Sprintf("deliver_to.headers: %s is set by the transfer itself", name))
		case strings.ContainsAny(value, "\r\n\x00"):
			return nil, errorf(CodeInvalidRequest, fmt.Sprintf("deliver_to.headers: the value of %s holds a line break or NUL", name))
		case len(name)+len(value) > maxDeliverHeader:
			return nil, errorf(CodeInvalidRequest, fmt.Sprintf("deliver_to.headers: %s is longer than %d bytes", name, maxDeliverHeader))
		}
		if out.Headers == nil {
			out.Headers = map[string]string{}
		}
		out.Headers[http.CanonicalHeaderKey(name)] = value
	}
	return out, nil
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// viewDeliverTo is d as job views show it, or nil.
func viewDeliverTo(d *store.Delivery) *deliverView {
	if d == nil {
		return nil
	}
	v := &deliverView{URL: webhook.RedactURL(d.URL), Headers: make(map[string]string, len(d.Headers))}
	for name := range d.Headers {
		v.Headers[name] = webhook.Redacted
	}
	return v
}

// remoteHash is what create's remote fields add to the idempotency hash.
func remoteHash(sourceURL string, d *store.Delivery) []byte {
	if sourceURL == "" && d == nil {
		return nil
	}
	b := fmt.Appendf(nil, "\x00source=%s", sourceURL)
	if d != nil {
		b = fmt.Appendf(b, "\x00deliver=%s", d.URL)
		names := make([]string, 0, len(d.Headers))
		for n := range d.Headers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b = fmt.Appendf(b, "\x00%s: %s", n, d.Headers[n])
		}
	}
	return b
}
