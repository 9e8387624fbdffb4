package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/store"
)

// Cache scopes (--cache-scope): who shares cached outputs.
const (
	// CacheScopeAccount shares cached outputs within an account only (the default), so no
	// account can learn whether another converted a file.
	CacheScopeAccount = "account"
	// CacheScopeGlobal shares cached outputs across accounts: an operator's opt-in.
	CacheScopeGlobal = "global"
)

// CacheConfig configures the conversion cache (docs/cache.md).
type CacheConfig struct {
	// Disabled turns the cache off: no job looks it up or is stored in it.
	Disabled bool
	// Scope is CacheScopeAccount ("" too) or CacheScopeGlobal.
	Scope string
}

// cacheStore is what the create's check of a cached output needs from the job store (both
// stores have it).
type cacheStore interface {
	CachedOutput(key string) (store.CacheEntry, bool, error)
	DropCacheEntry(key string) error
}

// checkInputSHA256 validates create's input_sha256: 64 lowercase hex digits, for an upload
// (a source_url job's input is fetched by the server, which hashes it itself).
func checkInputSHA256(v *string, sourceURL string) (string, error) {
	if v == nil {
		return "", nil
	}
	if sourceURL != "" {
		return "", errorf(CodeInvalidRequest, "input_sha256 applies to uploaded inputs, not to source_url")
	}
	if len(*v) != 64 {
		return "", errorf(CodeInvalidRequest, "input_sha256 must be the input's SHA-256 as 64 lowercase hex digits")
	}
	for _, c := range []byte(*v) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", errorf(CodeInvalidRequest, "input_sha256 must be the input's SHA-256 as 64 lowercase hex digits")
		}
	}
	return *v, nil
}

// cacheBase is a job's part of its cache key (store.Job.CacheBase): the scope (the account,
// or everyone), the formats, the canonical options (a preset already expanded) and the
// versions of the converters along the path; "" when the cache is off or the path has an
// unversioned converter.
func (s *Server) cacheBase(accountID, input, target string, rawOpts json.RawMessage) string {
	if s.cfg.Cache.Disabled {
		return ""
	}
	version, ok := s.cfg.Catalog.PathVersion(input, target)
	if !ok {
		return ""
	}
	scope := "account:" + accountID
	if s.cfg.Cache.Scope == CacheScopeGlobal {
		scope = "global"
	}
	h := sha256.New()
	for _, part := range []string{"convsvc-cache/1", scope, input, target, string(rawOpts), version} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkCachedOutput makes sure a create that will hit the cache gets an output that exists:
// an entry whose output object storage no longer has (deleted under it) is dropped, and the
// job converts instead. A fault of object storage leaves the entry alone.
func (s *Server) checkCachedOutput(ctx context.Context, p store.CreateJobParams) {
	cs, ok := s.cfg.Store.(cacheStore)
	if !ok || p.InputSHA256 == "" || p.CacheBase == "" {
		return
	}
	key := store.CacheKey(p.CacheBase, p.InputSHA256)
	e, found, err := cs.CachedOutput(key)
	if err != nil || !found {
		return
	}
	rc, _, err := s.cfg.Blobs.OpenOutput(ctx, e.Object, e.Output.Attempt)
	if err == nil {
		rc.Close()
		return
	}
	if errors.Is(err, blobstore.ErrNotFound) {
		s.log.Warn("cached output missing from object storage; entry dropped", "object", e.Object, "error", err)
		if err := cs.DropCacheEntry(key); err != nil {
			s.log.Error("drop cache entry", "error", err)
		}
	}
}
