package cli

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/worker"
)

// Ranges serve accepts. A value outside them is refused at start, by serve and by convsvc config
// alike (validate), with a message naming the flag and the range, rather than started with or
// silently replaced by something else.
const (
	maxWorkers            = 1024
	maxAttempts           = 1000
	maxRetention          = 10 * 365 * 24 * time.Hour
	maxTimeout            = 24 * time.Hour
	minLease              = time.Second
	maxSpendCapCents      = 1_000_000_000_000_000 // ten trillion currency units
	maxPixelsLimit        = 1 << 40
	minConversionMemory   = 16 << 20
	maxTrustedProxyPrefix = 1024
	maxConnections        = 1 << 20
	minOutputRatio        = 2
	maxOutputRatio        = 1_000_000
	minOutputBytes        = 1 << 20
)

// validate checks every serve setting, from flags and environment alike, and parses the ones
// that need it (--trusted-proxies) into o.cfg. serve and convsvc config both call it, so config
// is a true dry run. All problems are reported at once.
func (o *serveOptions) validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s (%s) %s", flag, envName(flag), fmt.Sprintf(format, args...)))
	}
	c := &o.cfg
	switch c.Isolation {
	case service.IsolationNone:
	case service.IsolationProcess:
		if !worker.Supported() {
			bad("isolation", "is process, which runs on Linux only: use none")
		}
	default:
		bad("isolation", "is %q: use process or none", c.Isolation)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		bad("data", "is empty: give the data directory")
	}
	for _, l := range []struct{ flag, addr string }{{"listen", c.Listen}, {"blob-listen", c.BlobListen}, {"metrics-listen", c.MetricsListen}} {
		if l.addr == "" && l.flag == "metrics-listen" {
			continue
		}
		if err := checkListenAddr(l.addr); err != nil {
			bad(l.flag, "is %q: %v; use HOST:PORT with a port from 0 to 65535, like 127.0.0.1:8080", l.addr, err)
		}
	}
	if c.Listen == c.BlobListen && !strings.HasSuffix(c.Listen, ":0") {
		bad("blob-listen", "is %q, the same as --listen: the API and object storage need addresses of their own", c.BlobListen)
	}
	if c.MetricsListen != "" && !strings.HasSuffix(c.MetricsListen, ":0") && (c.MetricsListen == c.Listen || c.MetricsListen == c.BlobListen) {
		bad("metrics-listen", "is %q, an address the API or object storage already uses; leave it empty to serve /metrics on the API", c.MetricsListen)
	}
	for _, u := range []struct{ flag, value string }{{"public-url", c.PublicURL}, {"blob-public-url", c.BlobPublicURL}} {
		if u.value == "" {
			continue
		}
		if err := checkPublicURL(u.value); err != nil {
			bad(u.flag, "is %q: %v; use an absolute http(s) URL without query or fragment, like https://convert.example.com", u.value, err)
		}
	}
	for _, origin := range c.CORSOrigins {
		if err := checkCORSOrigin(strings.TrimSpace(origin)); err != nil {
			bad("cors-origins", "has %q: %v; list origins as browsers send them in Origin, scheme://host[:port] like https://app.example.com, or * for any", origin, err)
		}
	}
	if service.IsPostgresURL(c.Database) {
		// The value is not quoted back: it may carry the database password.
		if u, err := url.Parse(c.Database); err != nil || u.Host == "" {
			bad("database", "is not a valid postgres:// URL: use postgres://USER@HOST:PORT/DATABASE (the password may come from $%s)", databasePasswordFileEnv)
		}
	}
	if c.Workers < 0 || c.Workers > maxWorkers {
		bad("workers", "is %d: use 0 (one per CPU) or 1 to %d", c.Workers, maxWorkers)
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > maxAttempts {
		bad("max-attempts", "is %d: use 1 to %d", c.MaxAttempts, maxAttempts)
	}
	for _, d := range []struct {
		flag     string
		value    time.Duration
		max      time.Duration
		maxHuman string
	}{
		{"retention", c.Retention, maxRetention, "87600h (ten years)"},
		{"drain-timeout", c.DrainTimeout, maxTimeout, "24h"},
		{"conversion-timeout", c.ConversionTimeout, maxTimeout, "24h"},
	} {
		if d.value <= 0 || d.value > d.max {
			bad(d.flag, "is %s: use a duration above 0 and at most %s, like 30s or 24h", d.value, d.maxHuman)
		}
	}
	if c.WebhookSecretOverlap < time.Minute || c.WebhookSecretOverlap > 720*time.Hour {
		bad("webhook-secret-overlap", "is %s: use 1m to 720h, like 24h (how long a replaced signing secret still signs)", c.WebhookSecretOverlap)
	}
	if c.Lease < minLease || c.Lease > maxTimeout {
		bad("lease", "is %s: use 1s to 24h, like 30s (a node heartbeats every third of it)", c.Lease)
	}
	if c.DefaultSpendCapCents < 1 || c.DefaultSpendCapCents > maxSpendCapCents {
		bad("default-spend-cap-cents", "is %d: use 1 to %d", c.DefaultSpendCapCents, int64(maxSpendCapCents))
	}
	if c.MaxPixels < 1 || c.MaxPixels > maxPixelsLimit {
		bad("max-pixels", "is %d: use 1 to %d", c.MaxPixels, int64(maxPixelsLimit))
	}
	if o.cacheHitCents < 0 || o.cacheHitCents > maxSpendCapCents {
		bad("cache-hit-cents", "is %d: use 0 to %d", o.cacheHitCents, int64(maxSpendCapCents))
	}
	if c.CacheScope != service.CacheScopeAccount && c.CacheScope != service.CacheScopeGlobal {
		bad("cache-scope", "is %q: use account or global", c.CacheScope)
	}
	if m := c.MaxConversionMemory; m != 0 && m < minConversionMemory {
		bad("max-conversion-memory", "is %d bytes: use 0 (half of the machine's memory) or at least 16MiB", m)
	}
	if r := c.MaxOutputRatio; !(r >= minOutputRatio && r <= maxOutputRatio) {
		bad("max-output-ratio", "is %v: use %d to %d output bytes per input byte", r, minOutputRatio, maxOutputRatio)
	}
	if c.MaxOutputBytes < minOutputBytes {
		bad("max-output-bytes", "is %d bytes: use at least 1MiB, like 4GiB", c.MaxOutputBytes)
	}
	if c.StorageProgressTimeout == 0 || c.StorageProgressTimeout > maxTimeout {
		bad("storage-progress-timeout", "is %s: use a duration above 0 and at most 24h, like 60s, or a negative one (-1s) to turn the check off", c.StorageProgressTimeout)
	}
	for _, n := range []struct {
		flag  string
		value int
	}{{"max-connections", c.MaxConnections}, {"max-connections-per-address", c.MaxConnectionsPerAddress}} {
		if n.value < -1 || n.value > maxConnections {
			bad(n.flag, "is %d: use 0 (sized from the open-file limit), 1 to %d, or -1 (no cap)", n.value, maxConnections)
		}
	}
	if o.memoryTrimDelay < 0 || o.memoryTrimDelay > maxTimeout {
		bad("memory-trim-delay", "is %s: use 0 (off) or a duration up to 24h, like 2s", o.memoryTrimDelay)
	}
	if o.gcHeapFloor < 0 {
		bad("gc-heap-floor", "is %d bytes: use 0 (off) or a size like 64MiB", int64(o.gcHeapFloor))
	}
	if _, err := newLogger(o.logFormat, o.logLevel, os.Stderr); err != nil {
		errs = append(errs, err)
	}
	c.TrustedProxies = c.TrustedProxies[:0]
	for _, p := range o.trustedProxies {
		prefix, err := parseProxyPrefix(p)
		if err != nil {
			bad("trusted-proxies", "has %q: %v; list CIDRs or addresses separated by commas, like 10.0.0.0/8,192.0.2.7", p, err)
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, prefix)
	}
	if len(o.trustedProxies) > maxTrustedProxyPrefix {
		bad("trusted-proxies", "lists %d entries: use at most %d (wider CIDRs cover more)", len(o.trustedProxies), maxTrustedProxyPrefix)
	}
	if _, _, s3, err := service.ParseObjectStorage(c.ObjectStorage); err != nil {
		bad("object-storage", "is %q: want s3://BUCKET[/PREFIX], or leave it empty for the blob store in the data dir", c.ObjectStorage)
	} else if s3 && c.S3.Endpoint != "" {
		if u, err := url.Parse(c.S3.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("s3-endpoint", "is %q: want http(s)://HOST[:PORT]", c.S3.Endpoint)
		}
	}
	if ps, err := parsePathStyle(o.s3PathStyle); err != nil {
		bad("s3-path-style", "%v", err)
	} else {
		c.S3.PathStyle = ps
	}
	return errors.Join(errs...)
}

// checkListenAddr accepts what net.Listen("tcp", addr) takes: an optional host and a numeric port.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("not HOST:PORT")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if strings.ContainsAny(host, " /\t") {
		return fmt.Errorf("host %q is not a host name or address", host)
	}
	return nil
}

// checkPublicURL accepts what blobstore.Open and the API's URLs need: an absolute http(s) URL
// with a host and no query or fragment.
func checkPublicURL(raw string) error {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the scheme is not http or https")
	case u.Host == "":
		return errors.New("there is no host")
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return errors.New("it has a query, a fragment or user information")
	}
	return nil
}

// checkCORSOrigin accepts * and what a browser can send in Origin: http or https, a host, an
// optional port other than the scheme's default, in lower case, and nothing else. Anything
// more (a path, a trailing slash, a query, user information, a wildcard inside a host, another
// scheme) never equals an Origin, so the page it was meant for would be refused.
func checkCORSOrigin(v string) error {
	if v == "*" {
		return nil
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("an Origin's scheme is http or https")
	case strings.Contains(v, "*"):
		return errors.New("a wildcard matches only as * alone; list each origin")
	case u.User != nil:
		return errors.New("an Origin has no user information")
	case u.Host == "" || strings.HasSuffix(u.Host, ":"):
		return errors.New("there is no host (or an empty port)")
	case u.Path == "/" && u.RawQuery == "" && u.Fragment == "":
		return errors.New("an Origin has no trailing slash")
	case u.Path != "" || u.RawPath != "":
		return errors.New("an Origin has no path")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(v, "#"):
		return errors.New("an Origin has no query or fragment")
	case v != strings.ToLower(v):
		return fmt.Errorf("browsers send it in lower case: %s", strings.ToLower(v))
	case (u.Scheme == "http" && u.Port() == "80") || (u.Scheme == "https" && u.Port() == "443"):
		return fmt.Errorf("browsers leave the default port out: %s://%s", u.Scheme, u.Hostname())
	}
	return nil
}

// warnings are the settings serve runs with but that clients are unlikely to manage with: a
// listener on every address (0.0.0.0, ::) with no public URL, which would put that address in
// URLs. serve logs them at start; config prints them on stderr.
func (o *serveOptions) warnings() []string {
	c := &o.cfg
	var out []string
	if c.PublicURL == "" && unspecifiedHost(c.Listen) {
		page := "object storage lets the web page upload only when it is opened at http://127.0.0.1, http://localhost or http://[::1] on that port"
		if len(c.CORSOrigins) > 0 {
			page = "clients are told http://" + c.Listen
		}
		out = append(out, fmt.Sprintf("--listen %s is every address and no --public-url (%s) names the one clients use, so %s; set --public-url to the API's address as browsers see it, like https://convert.example.com",
			c.Listen, envName("public-url"), page))
	}
	if _, _, s3, _ := service.ParseObjectStorage(c.ObjectStorage); !s3 && c.BlobPublicURL == "" && unspecifiedHost(c.BlobListen) {
		out = append(out, fmt.Sprintf("--blob-listen %s is every address and no --blob-public-url (%s) names the one clients use, so upload and download URLs name http://%s, which browsers refuse and other machines cannot reach; set --blob-public-url to object storage's address as clients see it, like https://files.example.com",
			c.BlobListen, envName("blob-public-url"), c.BlobListen))
	}
	return out
}

// unspecifiedHost reports whether a listen address has no host or an unspecified one (0.0.0.0,
// ::): the listener takes every address, and none of them is one to give clients.
func unspecifiedHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}

// parseProxyPrefix reads a CIDR, or one address as the prefix holding only it.
func parseProxyPrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, errors.New("not a CIDR")
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, errors.New("a zone is not allowed")
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 { // ::ffff:10.0.0.0/104 is 10.0.0.0/8
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, errors.New("not an IP address or CIDR")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
