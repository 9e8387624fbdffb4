package store

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
)

// KeyPrefix starts every live API key, so a key is recognisable in logs, configs and scanners.
const KeyPrefix = "cs_live_"

const (
	keyRandomLen   = 32
	keyChecksumLen = 6
	// KeyLen is the length of a complete live key.
	KeyLen = len(KeyPrefix) + keyRandomLen + keyChecksumLen
	// KeyDisplayPrefixLen is how much of a key is kept in clear to tell keys apart.
	KeyDisplayPrefixLen = 12
)

const base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ErrMalformedKey means a string is not shaped like a live key or its checksum is wrong.
var ErrMalformedKey = errors.New("malformed API key")

// randomBase62 returns n characters drawn uniformly from the base62 alphabet.
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/2)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			panic(fmt.Errorf("crypto/rand: %w", err)) // the kernel's RNG never fails on Linux
		}
		for _, b := range buf {
			// 248 = 4*62: rejecting the top values keeps every character equally likely.
			if b < 248 && len(out) < n {
				out = append(out, base62Alphabet[b%62])
			}
		}
	}
	return string(out)
}

// keyChecksum encodes the CRC-32 of the random part as six base62 characters.
func keyChecksum(random string) string {
	c := checksumOf(random)
	return string(c[:])
}

// checksumOf is keyChecksum without the string, for ParseKey, which every request runs.
func checksumOf(random string) (out [keyChecksumLen]byte) {
	sum := uint64(crc32.ChecksumIEEE([]byte(random)))
	for i := keyChecksumLen - 1; i >= 0; i-- {
		out[i] = base62Alphabet[sum%62]
		sum /= 62
	}
	return out
}

// NewKeySecret returns a fresh live key: prefix, 32 random base62 characters and a checksum.
func NewKeySecret() string {
	random := randomBase62(keyRandomLen)
	return KeyPrefix + random + keyChecksum(random)
}

// isBase62 tells the characters of base62Alphabet from every other byte.
var isBase62 = func() (t [256]bool) {
	for i := range len(base62Alphabet) {
		t[base62Alphabet[i]] = true
	}
	return t
}()

// ParseKey checks that s has the live-key shape and a valid checksum, without any lookup.
// Every request with a key runs it, so it builds no strings (the one allocation left is
// hash/crc32's copy of the random part).
func ParseKey(s string) error {
	if len(s) != KeyLen || !strings.HasPrefix(s, KeyPrefix) {
		return ErrMalformedKey
	}
	body := s[len(KeyPrefix):]
	for i := 0; i < len(body); i++ {
		if !isBase62[body[i]] {
			return ErrMalformedKey
		}
	}
	random, sum := body[:keyRandomLen], body[keyRandomLen:]
	if want := checksumOf(random); string(want[:]) != sum {
		return ErrMalformedKey
	}
	return nil
}

// hashKey is what the database stores instead of the key itself.
func hashKey(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }
