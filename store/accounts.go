package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultAccountName is the account serve creates on an empty data dir.
const DefaultAccountName = "default"

func validateAccount(name string, capCents int64) error {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return fmt.Errorf("%w: name must be 1 to 100 characters", ErrInvalidArgument)
	}
	if capCents < 0 {
		return fmt.Errorf("%w: spend_cap_cents must be 0 or more", ErrInvalidArgument)
	}
	return nil
}

// CreateAccount adds an account with the given monthly spend cap.
func (s *Store) CreateAccount(name string, spendCapCents int64) (Account, error) {
	if err := validateAccount(name, spendCapCents); err != nil {
		return Account{}, err
	}
	acct := Account{
		ID:            "acct_" + randomBase62(16),
		Name:          strings.TrimSpace(name),
		SpendCapCents: spendCapCents,
		MonthlySpend:  map[string]int64{},
		CreatedAt:     s.opts.Now().UTC(),
	}
	err := s.update(func(tx *bolt.Tx) error {
		return putAccount(tx, acct)
	})
	if err != nil {
		return Account{}, fmt.Errorf("create account: %w", err)
	}
	return acct, nil
}

// Account returns one account.
func (s *Store) Account(id string) (Account, error) {
	var acct Account
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		acct, err = findAccount(tx, id)
		return err
	})
	return acct, err
}

// Accounts returns every account, oldest first (then by id).
func (s *Store) Accounts() ([]Account, error) {
	var out []Account
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAccounts).ForEach(func(k, _ []byte) error {
			acct, err := findAccount(tx, string(k))
			if err != nil {
				return err
			}
			out = append(out, acct)
			return nil
		})
	})
	slices.SortFunc(out, func(a, b Account) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// PageParams selects a page of a list kept oldest first: at most Limit items (default 20)
// after the one with id StartingAfter (from the start when empty).
type PageParams struct {
	Limit         int
	StartingAfter string
}

// Page cuts the page p selects out of items, which are sorted; id names an item. A cursor that
// names no item is ErrNotFound.
func Page[T any](items []T, p PageParams, id func(T) string) ([]T, bool, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	if p.StartingAfter != "" {
		i := slices.IndexFunc(items, func(v T) bool { return id(v) == p.StartingAfter })
		if i < 0 {
			return nil, false, fmt.Errorf("%w: starting_after %q names no item of the list", ErrNotFound, p.StartingAfter)
		}
		items = items[i+1:]
	}
	if len(items) > p.Limit {
		return items[:p.Limit], true, nil
	}
	return items, false, nil
}

// AccountsPage returns a page of the accounts, oldest first (then by id), and whether more
// follow. An unknown StartingAfter is ErrNotFound.
func (s *Store) AccountsPage(p PageParams) ([]Account, bool, error) {
	accts, err := s.Accounts()
	if err != nil {
		return nil, false, err
	}
	return Page(accts, p, func(a Account) string { return a.ID })
}

// KeysPage returns a page of an account's keys, oldest first (then by id), and whether more
// follow. An unknown account, or a StartingAfter that names no key of it, is ErrNotFound.
func (s *Store) KeysPage(accountID string, p PageParams) ([]APIKey, bool, error) {
	keys, err := s.Keys(accountID)
	if err != nil {
		return nil, false, err
	}
	return Page(keys, p, func(k APIKey) string { return k.ID })
}

// UpdateAccount changes an account's name and/or spend cap; nil leaves a field as it is.
func (s *Store) UpdateAccount(id string, name *string, spendCapCents *int64) (Account, error) {
	var acct Account
	err := s.update(func(tx *bolt.Tx) error {
		var err error
		if acct, err = findAccount(tx, id); err != nil {
			return err
		}
		if name != nil {
			acct.Name = *name
		}
		if spendCapCents != nil {
			acct.SpendCapCents = *spendCapCents
		}
		if err := validateAccount(acct.Name, acct.SpendCapCents); err != nil {
			return err
		}
		acct.Name = strings.TrimSpace(acct.Name)
		return putAccount(tx, acct)
	})
	return acct, err
}

func findAccount(tx *bolt.Tx, id string) (Account, error) {
	var acct Account
	err := readRecord(tx.Bucket(bucketAccounts).Get([]byte(id)), &acct, decodeAccount)
	if err == ErrNotFound {
		return Account{}, err
	} else if err != nil {
		return Account{}, fmt.Errorf("account record %q: %w", id, err)
	}
	if acct.MonthlySpend == nil {
		acct.MonthlySpend = map[string]int64{}
	}
	return acct, nil
}

func putAccount(tx *bolt.Tx, acct Account) error {
	return tx.Bucket(bucketAccounts).Put([]byte(acct.ID), appendAccount(make([]byte, 0, 128), &acct))
}

// CreateKey issues a new live key for the account and returns its record and the secret,
// which is never stored and cannot be shown again.
func (s *Store) CreateKey(accountID string) (APIKey, string, error) {
	return s.CreateKeyWith(accountID, KeyOptions{})
}

// KeyOptions are the limits a key is created with.
type KeyOptions struct {
	// PresetsOnly limits the key to jobs created from a preset.
	PresetsOnly bool
}

// CreateKeyWith is CreateKey with limits on what the key may do.
func (s *Store) CreateKeyWith(accountID string, o KeyOptions) (APIKey, string, error) {
	var key APIKey
	var secret string
	err := s.update(func(tx *bolt.Tx) error {
		var err error
		key, secret, err = createKey(tx, accountID, s.opts.Now(), o)
		return err
	})
	return key, secret, err
}

func createKey(tx *bolt.Tx, accountID string, now time.Time, o KeyOptions) (APIKey, string, error) {
	if _, err := findAccount(tx, accountID); err != nil {
		return APIKey{}, "", err
	}
	secret := NewKeySecret()
	hash := hashKey(secret)
	key := APIKey{
		ID:          "key_" + randomBase62(16),
		AccountID:   accountID,
		Prefix:      secret[:KeyDisplayPrefixLen],
		Hash:        hash[:],
		CreatedAt:   now.UTC(),
		PresetsOnly: o.PresetsOnly,
	}
	if err := putJSON(tx.Bucket(bucketKeys), []byte(key.ID), key); err != nil {
		return APIKey{}, "", err
	}
	if err := tx.Bucket(bucketKeyHashes).Put(key.Hash, []byte(key.ID)); err != nil {
		return APIKey{}, "", err
	}
	return key, secret, nil
}

// Keys lists an account's keys, oldest first (then by id).
func (s *Store) Keys(accountID string) ([]APIKey, error) {
	var out []APIKey
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, err := findAccount(tx, accountID); err != nil {
			return err
		}
		return tx.Bucket(bucketKeys).ForEach(func(k, v []byte) error {
			var key APIKey
			if err := getJSON(tx.Bucket(bucketKeys), k, &key); err != nil {
				return err
			}
			if key.AccountID == accountID {
				out = append(out, key)
			}
			return nil
		})
	})
	slices.SortFunc(out, func(a, b APIKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// RevokeKey revokes a key at once; revoking it again changes nothing.
func (s *Store) RevokeKey(keyID string) (APIKey, error) {
	var key APIKey
	err := s.update(func(tx *bolt.Tx) error {
		key = APIKey{} // a retried batch must not see the first run's changes
		b := tx.Bucket(bucketKeys)
		if err := getJSON(b, []byte(keyID), &key); err != nil {
			return err
		}
		if key.RevokedAt != nil {
			return nil
		}
		now := s.opts.Now().UTC()
		key.RevokedAt = &now
		return putJSON(b, []byte(key.ID), key)
	})
	if err == nil {
		s.keys.forget(key.Hash)
	}
	return key, err
}

// Authenticate resolves a live key to its record. A malformed, unknown or revoked key is
// ErrUnauthorized. Live keys are cached (keyCache); a revocation takes effect when RevokeKey returns.
func (s *Store) Authenticate(secret string) (APIKey, error) {
	if err := ParseKey(secret); err != nil {
		return APIKey{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	h := hashKey(secret)
	if key, ok := s.keys.get(h); ok {
		return key, nil
	}
	gen := s.keys.generation()
	var key APIKey
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketKeyHashes).Get(h[:])
		if id == nil {
			return ErrUnauthorized
		}
		if err := getJSON(tx.Bucket(bucketKeys), id, &key); err != nil {
			return err
		}
		if key.RevokedAt != nil {
			return fmt.Errorf("%w: key revoked", ErrUnauthorized)
		}
		return nil
	})
	if err != nil {
		return APIKey{}, err
	}
	s.keys.put(h, key, gen)
	return key, nil
}

// AuthenticateJob is Authenticate and then Job for the key's account in one call (the API's
// GET of a job; pgstore makes it one round trip). err is the key's, as Authenticate answers
// it; when the key is live, jobErr is the job's, as Job answers it.
func (s *Store) AuthenticateJob(secret, jobID string) (key APIKey, job Job, jobErr, err error) {
	if key, err = s.Authenticate(secret); err != nil {
		return APIKey{}, Job{}, nil, err
	}
	job, jobErr = s.Job(key.AccountID, jobID)
	return key, job, jobErr, nil
}

// EnsureDefaultAccount creates account "default" and one key when the database has no account.
// It returns the new key's secret, or "" when accounts already existed.
func (s *Store) EnsureDefaultAccount(spendCapCents int64) (Account, string, error) {
	var acct Account
	var secret string
	err := s.update(func(tx *bolt.Tx) error {
		acct, secret = Account{}, ""
		if k, _ := tx.Bucket(bucketAccounts).Cursor().First(); k != nil {
			return nil
		}
		acct = Account{
			ID:            "acct_" + randomBase62(16),
			Name:          DefaultAccountName,
			SpendCapCents: spendCapCents,
			MonthlySpend:  map[string]int64{},
			CreatedAt:     s.opts.Now().UTC(),
		}
		if err := putAccount(tx, acct); err != nil {
			return err
		}
		var err error
		_, secret, err = createKey(tx, acct.ID, s.opts.Now(), KeyOptions{})
		return err
	})
	return acct, secret, err
}
