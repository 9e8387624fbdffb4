package store

import (
	"crypto/sha256"
	"time"
)

// The helpers below let a second backend (pgstore) issue ids, keys and months exactly as this
// store does, so both hand httpapi the same shapes.

// NewJobID returns a fresh job id whose first characters sort by the creation time now.
func NewJobID(now time.Time) string { return newJobID(now) }

// NewAccountID returns a fresh account id ("acct_" and 16 random base62 characters).
func NewAccountID() string { return "acct_" + randomBase62(16) }

// NewKeyID returns a fresh key id ("key_" and 16 random base62 characters).
func NewKeyID() string { return "key_" + randomBase62(16) }

// HashKey is the SHA-256 of a key secret, which is all a database keeps of it.
func HashKey(secret string) [sha256.Size]byte { return hashKey(secret) }

// MonthOf names the calendar month (UTC) of t as the ledger does: "2006-01".
func MonthOf(t time.Time) string { return monthOf(t) }

// ValidateAccount checks an account's name and spend cap as CreateAccount does.
func ValidateAccount(name string, spendCapCents int64) error {
	return validateAccount(name, spendCapCents)
}
