package store

import (
	"crypto/sha256"
	"sync"
)

// maxCachedKeys bounds the key cache; when it is full it starts over.
const maxCachedKeys = 10_000

// keyCache remembers live keys by the SHA-256 of their secret, so that authenticating a request
// is a hash and a map lookup instead of a read transaction (8% of the API server's CPU per
// create). The process holds bbolt's exclusive lock, so no other writer can revoke a key behind
// its back; RevokeKey forgets the key once its revocation committed, and the generation keeps a
// lookup that read the key before the revocation from caching it afterwards.
type keyCache struct {
	mu   sync.RWMutex
	gen  uint64
	keys map[[sha256.Size]byte]APIKey
}

// get returns the cached live key whose secret hashes to h.
func (c *keyCache) get(h [sha256.Size]byte) (APIKey, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	key, ok := c.keys[h]
	return key, ok
}

// generation is taken before reading a key from the database, and given back to put.
func (c *keyCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put caches a live key read from the database, unless a key was forgotten since gen.
func (c *keyCache) put(h [sha256.Size]byte, key APIKey, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.keys == nil || len(c.keys) >= maxCachedKeys {
		c.keys = map[[sha256.Size]byte]APIKey{}
	}
	c.keys[h] = key
}

// forget drops the key whose stored hash is hash and moves to a new generation.
func (c *keyCache) forget(hash []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if len(hash) == sha256.Size {
		delete(c.keys, [sha256.Size]byte(hash))
	}
}
