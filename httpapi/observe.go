package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the HTTP collectors of the API and object-storage servers; NewMetrics registers them.
type Metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
}

// NewMetrics creates the HTTP collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "convsvc_http_requests_total",
			Help: "HTTP requests answered, by server (api or storage), method, route template and status.",
		}, []string{"server", "method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "convsvc_http_request_duration_seconds",
			Help: "Time from request to the end of the response, by server, method and route template. GET /v1/jobs/:id?wait=N long-polls count too.",
			// Up to the 60 s a ?wait= long-poll may hold a request.
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"server", "method", "route"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "convsvc_http_rate_limited_total",
			Help: "Requests refused with 429 rate_limited, by budget: write and read (per key), address (failed API authentication per client address), admin (failed admin authentication per client address).",
		}, []string{"budget"}),
	}
	for _, b := range []string{budgetWrite, budgetRead, budgetAddress, budgetAdmin} {
		m.rateLimited.WithLabelValues(b) // present from the start, so rate() works on the first 429
	}
	reg.MustRegister(m.requests, m.duration, m.rateLimited)
	return m
}

// Rate-limit budgets, the values of convsvc_http_rate_limited_total's label.
const (
	budgetWrite   = "write"
	budgetRead    = "read"
	budgetAddress = "address"
	budgetAdmin   = "admin"
)

// rateLimited counts a 429; m may be nil.
func (m *Metrics) rateLimitedInc(budget string) {
	if m != nil {
		m.rateLimited.WithLabelValues(budget).Inc()
	}
}

// RouteUnmatched is the route label of a request that matched no route.
const RouteUnmatched = "unmatched"

// Observe configures Observed.
type Observe struct {
	// Logger receives one line per request.
	Logger *slog.Logger
	// Metrics, when set, counts requests and their latency.
	Metrics *Metrics
	// Server is the metrics' server label: "api", "storage" or "metrics".
	Server string
	// Route names a request's route template when the handler did not (with setRoute);
	// nil means RouteUnmatched.
	Route func(*http.Request) string
}

// Observed gives every request a Request-Id (the caller's, if plain and short, else a new one),
// echoes it in the response, counts the request in o.Metrics, and logs one line: id, method,
// route template, status, duration, bytes and, when authenticated, the account id. It never
// logs a key, a query string or a signature.
func Observed(h http.Handler, o Observe) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		info := &requestInfo{id: id}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		w.Header().Set("Request-Id", id)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			// Also for a handler that aborted with a panic (http.ErrAbortHandler), which
			// net/http turns into a cut connection.
			v := recover()
			elapsed := time.Since(start)
			route := info.route
			if route == "" && o.Route != nil {
				route = o.Route(r)
			}
			if route == "" {
				route = RouteUnmatched
			}
			method := methodLabel(r.Method)
			if o.Metrics != nil {
				o.Metrics.requests.WithLabelValues(o.Server, method, route, statusLabel(rec.status)).Inc()
				o.Metrics.duration.WithLabelValues(o.Server, method, route).Observe(elapsed.Seconds())
			}
			logRequest(o.Logger, r, info, method, route, rec, elapsed, v != nil)
			if v != nil {
				panic(v)
			}
		}()
		h.ServeHTTP(rec, r)
	})
}

// logRequest writes the request's log line. The attributes are built only for a logger that
// writes them (not at --log-level warn), and as slog.Attrs, which box nothing.
func logRequest(log *slog.Logger, r *http.Request, info *requestInfo, method, route string, rec *statusRecorder, elapsed time.Duration, aborted bool) {
	if !log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	var buf [8]slog.Attr
	attrs := append(buf[:0],
		slog.String("request_id", info.id), slog.String("method", method), slog.String("route", route),
		slog.Int("status", rec.status), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.Int64("bytes", rec.bytes))
	if acct := info.accountID.Load(); acct != nil {
		attrs = append(attrs, slog.String("account_id", *acct))
	}
	if aborted {
		attrs = append(attrs, slog.Bool("aborted", true))
	}
	log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// methodLabel keeps the method label's values few: an unusual method is "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// storageRoutes are object storage's routes and the path prefix each matches.
var storageRoutes = [...]struct{ prefix, route string }{
	{"/uploads/", "/uploads/:id"},
	{"/outputs/", "/outputs/:id"},
}

// StorageRoute names the object-storage route of r: /uploads/:id, /outputs/:id or unmatched.
func StorageRoute(r *http.Request) string {
	for _, s := range storageRoutes {
		if rest, ok := strings.CutPrefix(r.URL.Path, s.prefix); ok && rest != "" && !strings.Contains(rest, "/") {
			return s.route
		}
	}
	return RouteUnmatched
}

// statusLabel is the status code as a metric label, without an allocation for the usual ones.
func statusLabel(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusCreated:
		return "201"
	case http.StatusAccepted:
		return "202"
	case http.StatusNoContent:
		return "204"
	}
	return strconv.Itoa(code)
}

// setRoute records the matched route template for the request log and metrics.
func setRoute(r *http.Request, route string) {
	if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		info.route = route
	}
}

// templateOf rebuilds the route template of a path from the parameters the router matched:
// each segment equal to the next parameter's value becomes ":name".
func templateOf(path string, ps []paramKV) string {
	parts := strings.Split(path, "/")
	i := 0
	for j, part := range parts {
		if i < len(ps) && part == ps[i].value {
			parts[j] = ":" + ps[i].key
			i++
		}
	}
	if i < len(ps) {
		return RouteUnmatched
	}
	return strings.Join(parts, "/")
}

// paramKV is a router parameter, decoupled from httprouter for templateOf's tests.
type paramKV struct{ key, value string }
