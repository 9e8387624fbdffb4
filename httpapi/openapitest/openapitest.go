// Package openapitest holds HTTP exchanges made in tests against the service's
// OpenAPI document, so that every response a test sees is also a contract check.
//
// It is imported only by tests.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// BodyLimit is the most bytes of a request or response body that Client buffers
// for validation; larger bodies are streamed through with their body unchecked.
const BodyLimit = 1 << 20

// Validator checks HTTP exchanges against the service's OpenAPI document.
type Validator struct {
	t      testing.TB
	doc    *openapi3.T
	router routers.Router

	// storagePaths are the path templates served by object storage, whose
	// generic errors use the storage error responses.
	storagePaths map[string]bool

	// seen is shared by a validator and every validator For made from it.
	seen *seenCounts
}

// seenCounts counts checked exchanges per "METHOD /path/template STATUS".
type seenCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// New loads and validates doc, failing t if the document itself is invalid.
func New(t testing.TB, doc []byte) *Validator {
	t.Helper()
	v, err := newValidator(doc)
	if err != nil {
		t.Fatalf("openapitest: %v", err)
		return nil
	}
	v.t = t
	return v
}

// Load loads and validates doc without a test to report to, for a validator shared by a whole
// test binary; give each test its own view with For before calling Client.
func Load(doc []byte) (*Validator, error) { return newValidator(doc) }

// For returns a validator that reports mismatches to t and counts exchanges into v's Seen, so
// Seen on v (or on any of its views) covers every test that used a view.
func (v *Validator) For(t testing.TB) *Validator {
	c := *v
	c.t = t
	return &c
}

func newValidator(data []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("invalid OpenAPI document: %w", err)
	}
	if doc.Components == nil || doc.Components.Responses == nil {
		return nil, errors.New("invalid OpenAPI document: no components.responses")
	}
	for _, name := range []string{"NotFound", "MethodNotAllowed", "StorageNotFound", "StorageMethodNotAllowed"} {
		if r := doc.Components.Responses[name]; r == nil || r.Value == nil {
			return nil, fmt.Errorf("invalid OpenAPI document: components.responses.%s is missing", name)
		}
	}

	// Test servers listen on random ports, so routes match on the path alone:
	// drop every servers list before building the router.
	v := &Validator{doc: doc, storagePaths: map[string]bool{}, seen: &seenCounts{n: map[string]int{}}}
	doc.Servers = nil
	for path, item := range doc.Paths.Map() {
		if len(item.Servers) > 0 {
			v.storagePaths[path] = true
		}
		item.Servers = nil
		for _, op := range item.Operations() {
			op.Servers = nil
		}
	}
	if v.router, err = gorillamux.NewRouter(doc); err != nil {
		return nil, fmt.Errorf("route OpenAPI document: %w", err)
	}
	return v, nil
}

// Check reports whether one exchange matches the document: the request must
// match an operation and the response one of its documented statuses, headers
// and bodies.
//
// A request the document does not allow (no credentials, a parameter out of
// range, a bad body) is accepted only when the server rejected it with a
// documented 4xx response. An unknown path is accepted only as a documented
// 404 not_found, a known path with an unlisted method only as a documented 405
// method_not_allowed; anything else without an operation is an error.
func (v *Validator) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	return v.check(req, reqBody, false, resp, respBody, false)
}

// check is Check with the option to skip a body that was too large to buffer.
func (v *Validator) check(req *http.Request, reqBody []byte, skipReqBody bool, resp *http.Response, respBody []byte, skipRespBody bool) error {
	ctx := req.Context()
	status := resp.StatusCode

	route, pathParams, err := v.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		v.record(req.Method, req.URL.Path, status)
		return v.checkGeneric(ctx, req, resp, respBody, skipRespBody, http.StatusNotFound, "NotFound",
			fmt.Sprintf("no path in the document matches %s", req.URL.Path))
	case errors.Is(err, routers.ErrMethodNotAllowed):
		template := v.templateOf(req)
		v.record(req.Method, template, status)
		name := "MethodNotAllowed"
		if v.storagePaths[template] {
			name = "StorageMethodNotAllowed"
		}
		return v.checkGeneric(ctx, req, resp, respBody, skipRespBody, http.StatusMethodNotAllowed, name,
			fmt.Sprintf("%s %s is not a documented operation", req.Method, template))
	case err != nil:
		return fmt.Errorf("find operation: %w", err)
	}
	v.record(req.Method, route.Path, status)

	documented := route.Operation.Responses.Status(status)
	if documented == nil {
		return fmt.Errorf("status %d is not documented for %s %s", status, req.Method, route.Path)
	}
	if skipRespBody && documented.Value != nil {
		if mt := documented.Value.Content.Get(resp.Header.Get("Content-Type")); mt != nil && mt.Schema != nil && !isEventStream(resp) {
			return fmt.Errorf("response body over %d bytes, too large to validate against its schema", BodyLimit)
		}
	}

	opts := v.options()
	reqInput := &openapi3filter.RequestValidationInput{
		Request:    withBody(req, reqBody, skipReqBody),
		PathParams: pathParams,
		Route:      route,
		Options:    opts,
	}
	if skipReqBody {
		reqOpts := *opts
		reqOpts.ExcludeRequestBody = true
		reqInput.Options = &reqOpts
	}
	reqErr := openapi3filter.ValidateRequest(ctx, reqInput)

	// ValidateResponse ignores HEAD exchanges entirely; validate their
	// headers as those of a body-less GET of the same operation.
	respOpts := *opts
	validationReq := reqInput.Request
	if req.Method == http.MethodHead {
		validationReq = validationReq.Clone(ctx)
		validationReq.Method = http.MethodGet
		respOpts.ExcludeResponseBody = true
	}
	if skipRespBody {
		respOpts.ExcludeResponseBody = true
	}
	respInput := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    validationReq,
			PathParams: pathParams,
			Route:      route,
			Options:    &respOpts,
		},
		Status:  status,
		Header:  resp.Header,
		Options: &respOpts,
	}
	respInput.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, respInput); err != nil {
		return fmt.Errorf("response does not match the document: %w", err)
	}

	if reqErr != nil && (status < 400 || status > 499) {
		return fmt.Errorf("request does not match the document, yet the server answered %d instead of rejecting it: %w", status, reqErr)
	}
	return nil
}

// checkGeneric validates an exchange that matched no operation against the
// document's generic response components.name, which only status may use.
func (v *Validator) checkGeneric(ctx context.Context, req *http.Request, resp *http.Response, respBody []byte, skipRespBody bool, want int, name, why string) error {
	if resp.StatusCode != want {
		return fmt.Errorf("%s, and the server answered %d rather than %d", why, resp.StatusCode, want)
	}
	responses := openapi3.NewResponses()
	responses.Set(fmt.Sprint(want), v.doc.Components.Responses[name])
	route := &routers.Route{
		Spec:      v.doc,
		Path:      req.URL.Path,
		PathItem:  &openapi3.PathItem{},
		Method:    req.Method,
		Operation: &openapi3.Operation{Responses: responses},
	}
	opts := *v.options()
	validationReq := req
	if req.Method == http.MethodHead || skipRespBody {
		validationReq = req.Clone(ctx)
		validationReq.Method = http.MethodGet
		opts.ExcludeResponseBody = true
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: validationReq, Route: route, Options: &opts},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &opts,
	}
	input.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, input); err != nil {
		return fmt.Errorf("%s, and the %d response does not match components.responses.%s: %w", why, want, name, err)
	}
	return nil
}

// templateOf returns the path template of req's path, for a request whose
// method the path does not list.
func (v *Validator) templateOf(req *http.Request) string {
	for path, item := range v.doc.Paths.Map() {
		for method := range item.Operations() {
			probe := req.Clone(req.Context())
			probe.Method = method
			if route, _, err := v.router.FindRoute(probe); err == nil && route.Path == path {
				return path
			}
		}
	}
	return req.URL.Path
}

// options returns fresh validation options: the filter functions may keep
// state in them.
func (v *Validator) options() *openapi3filter.Options {
	return &openapi3filter.Options{
		IncludeResponseStatus:             true,
		RejectWhenRequestBodyNotSpecified: true,
		SkipSettingDefaults:               true,
		MultiError:                        false,
		AuthenticationFunc:                bearerPresent,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{
			openapi3.WithStringFormatValidator("uri", openapi3.NewCallbackValidator(validateURI)),
		},
	}
}

// bearerPresent is the document's notion of authentication: a request carries
// credentials when it has an Authorization: Bearer header. Whether the key is
// valid is the server's business (403), not the contract's.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme := in.SecurityScheme
	if scheme == nil || scheme.Type != "http" || !strings.EqualFold(scheme.Scheme, "bearer") {
		return in.NewError(fmt.Errorf("security scheme %q is not an HTTP bearer scheme", in.SecuritySchemeName))
	}
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	scheme0, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme0, "Bearer") || strings.TrimSpace(token) == "" {
		return in.NewError(errors.New("no Authorization: Bearer header"))
	}
	return nil
}

// validateURI accepts absolute http and https URLs, the only URIs the API hands out.
func validateURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// withBody returns a copy of req whose body is body, leaving req untouched.
func withBody(req *http.Request, body []byte, skipped bool) *http.Request {
	r := req.Clone(req.Context())
	if skipped {
		r.Body = http.NoBody
		r.GetBody = nil
		return r
	}
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		r.Body = http.NoBody
		r.GetBody = nil
		return r
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r
}

func (v *Validator) record(method, path string, status int) {
	v.seen.mu.Lock()
	defer v.seen.mu.Unlock()
	v.seen.n[fmt.Sprintf("%s %s %d", method, path, status)]++
}

// Seen returns how many exchanges were checked per "METHOD /path/template STATUS"
// (the raw path for a path the document does not know), so a test can assert
// which operations and statuses it covered.
func (v *Validator) Seen() map[string]int {
	v.seen.mu.Lock()
	defer v.seen.mu.Unlock()
	out := make(map[string]int, len(v.seen.n))
	for k, n := range v.seen.n {
		out[k] = n
	}
	return out
}

// Operations returns every documented "METHOD /path/template STATUS", sorted,
// for comparing with Seen.
func (v *Validator) Operations() []string {
	var out []string
	for path, item := range v.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				out = append(out, fmt.Sprintf("%s %s %s", method, path, status))
			}
		}
	}
	slices.Sort(out)
	return out
}

// Client returns a copy of base (http.DefaultClient when nil) whose transport
// checks every exchange and reports a mismatch with t.Errorf. A validator from
// Load has no t: use For(t).Client.
func (v *Validator) Client(base *http.Client) *http.Client {
	if v.t == nil {
		panic("openapitest: Client on a validator without a test; use For(t).Client")
	}
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = &transport{v: v, next: next}
	return &c
}

// transport validates the exchanges it carries.
type transport struct {
	v    *Validator
	next http.RoundTripper
}

// RoundTrip sends req and checks the exchange.
func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	reqBody, skipReqBody, sent, err := bufferRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := tr.next.RoundTrip(sent)
	if err != nil {
		return nil, err
	}
	if isEventStream(resp) {
		// An event stream never ends by itself: its status and headers are held against the
		// document as it opens, and the caller reads its events as they come.
		if err := tr.v.check(req, reqBody, skipReqBody, resp, nil, true); err != nil {
			tr.v.t.Errorf("openapitest: %s %s -> %d: %v", req.Method, req.URL.Path, resp.StatusCode, err)
		}
		return resp, nil
	}
	respBody, rest, err := readPrefix(resp.Body, BodyLimit)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("openapitest: read response body: %w", err)
	}
	skipRespBody := rest != nil
	if skipRespBody {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(respBody), rest), resp.Body}
	} else {
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(respBody))
	}
	if err := tr.v.check(req, reqBody, skipReqBody, resp, respBody, skipRespBody); err != nil {
		tr.v.t.Errorf("openapitest: %s %s -> %d: %v", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	return resp, nil
}

// bufferRequest reads up to BodyLimit bytes of req's body for validation and
// returns the request to send, whose body still yields every byte. A larger
// body is streamed and reported as skipped.
func bufferRequest(req *http.Request) (body []byte, skipped bool, sent *http.Request, err error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, false, req, nil
	}
	if req.ContentLength > BodyLimit {
		return nil, true, req, nil
	}
	prefix, rest, err := readPrefix(req.Body, BodyLimit)
	if err != nil {
		req.Body.Close()
		return nil, false, nil, fmt.Errorf("openapitest: read request body: %w", err)
	}
	sent = req.Clone(req.Context())
	if rest != nil {
		sent.Body = readCloser{io.MultiReader(bytes.NewReader(prefix), rest), req.Body}
		return nil, true, sent, nil
	}
	req.Body.Close()
	sent.Body = io.NopCloser(bytes.NewReader(prefix))
	return prefix, false, sent, nil
}

// readPrefix reads r whole when it holds at most limit bytes (rest is nil);
// otherwise it returns the bytes read so far and rest, the unread remainder.
func readPrefix(r io.Reader, limit int64) (prefix []byte, rest io.Reader, err error) {
	prefix, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(prefix)) > limit {
		return prefix, r, nil
	}
	return prefix, nil, nil
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// isEventStream reports whether resp is Server-Sent Events (text/event-stream).
func isEventStream(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}
