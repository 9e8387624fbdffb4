package store

import (
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestStore_RevokeWhileAuthenticating revokes keys that other goroutines keep authenticating
// with: no Authenticate that began after RevokeKey returned may succeed, whatever the cache
// held or was filling at the time.
func TestStore_RevokeWhileAuthenticating(t *testing.T) {
	s := mustOpen(t, newClock())
	a := mustAccount(t, s, 1)
	for range 40 {
		key, secret, err := s.CreateKey(a.ID)
		if err != nil {
			t.Fatal(err)
		}
		var revoked, stop atomic.Bool
		var late atomic.Int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for !stop.Load() {
					after := revoked.Load()
					if _, err := s.Authenticate(secret); err == nil && after {
						late.Add(1)
					}
				}
			})
		}
		if _, err := s.RevokeKey(key.ID); err != nil {
			t.Fatal(err)
		}
		revoked.Store(true)
		if _, err := s.Authenticate(secret); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("right after RevokeKey: %v", err)
		}
		stop.Store(true)
		wg.Wait()
		if n := late.Load(); n > 0 {
			t.Fatalf("%d authentications that began after RevokeKey returned succeeded", n)
		}
	}
}

func TestKeyCache_StaleGenerationNotCached(t *testing.T) {
	var c keyCache
	h := sha256.Sum256([]byte("secret"))
	gen := c.generation()
	c.forget(h[:]) // a revocation lands while the key is being read
	c.put(h, APIKey{ID: "key_1"}, gen)
	if _, ok := c.get(h); ok {
		t.Fatal("a key read before a revocation was cached after it")
	}
	c.put(h, APIKey{ID: "key_1"}, c.generation())
	if key, ok := c.get(h); !ok || key.ID != "key_1" {
		t.Fatalf("get = %v %v", key, ok)
	}
	for i := range maxCachedKeys + 1 {
		c.put(sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)}), APIKey{}, c.generation())
	}
	if n := len(c.keys); n > maxCachedKeys {
		t.Fatalf("cache holds %d keys, bound %d", n, maxCachedKeys)
	}
}
