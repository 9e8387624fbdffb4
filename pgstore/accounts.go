package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

const accountCols = `id, name, spend_cap_cents, reserved_cents, created_at, max_running, max_queued`

func scanAccount(row pgx.Row) (store.Account, error) {
	var a store.Account
	err := row.Scan(&a.ID, &a.Name, &a.SpendCapCents, &a.ReservedCents, &a.CreatedAt, &a.MaxRunning, &a.MaxQueued)
	if isNoRows(err) {
		return store.Account{}, store.ErrNotFound
	}
	a.CreatedAt = a.CreatedAt.UTC()
	a.MonthlySpend = map[string]int64{}
	return a, err
}

// loadSpend fills the accounts' MonthlySpend and PurgedSuccesses from month_spend.
func loadSpend(ctx context.Context, q pgx.Tx, accts []store.Account) error {
	if len(accts) == 0 {
		return nil
	}
	byID := map[string]*store.Account{}
	ids := make([]string, len(accts))
	for i := range accts {
		byID[accts[i].ID] = &accts[i]
		ids[i] = accts[i].ID
	}
	rows, err := q.Query(ctx, `SELECT account_id, month, cents, purged_successes FROM month_spend WHERE account_id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, month string
		var cents, purged int64
		if err := rows.Scan(&id, &month, &cents, &purged); err != nil {
			return err
		}
		a := byID[id]
		if cents != 0 {
			a.MonthlySpend[month] = cents
		}
		if purged != 0 {
			if a.PurgedSuccesses == nil {
				a.PurgedSuccesses = map[string]int64{}
			}
			a.PurgedSuccesses[month] = purged
		}
	}
	return rows.Err()
}

// CreateAccount adds an account with the given monthly spend cap.
func (s *Store) CreateAccount(name string, spendCapCents int64) (store.Account, error) {
	if err := store.ValidateAccount(name, spendCapCents); err != nil {
		return store.Account{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	acct, err := scanAccount(s.pool.QueryRow(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at)
		VALUES ($1, $2, $3, now()) RETURNING `+accountCols, store.NewAccountID(), strings.TrimSpace(name), spendCapCents))
	if err != nil {
		return store.Account{}, wrap("create account", err)
	}
	return acct, nil
}

// Account returns one account with its monthly spend.
func (s *Store) Account(id string) (store.Account, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var acct store.Account
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		if acct, err = scanAccount(tx.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, id)); err != nil {
			return err
		}
		accts := []store.Account{acct}
		err = loadSpend(ctx, tx, accts)
		acct = accts[0]
		return err
	})
	if err != nil {
		return store.Account{}, wrap("account", err)
	}
	return acct, nil
}

// Accounts returns every account, oldest first.
func (s *Store) Accounts() ([]store.Account, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var out []store.Account
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+accountCols+` FROM accounts ORDER BY created_at, seq`)
		if err != nil {
			return err
		}
		if out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Account, error) { return scanAccount(row) }); err != nil {
			return err
		}
		return loadSpend(ctx, tx, out)
	})
	if err != nil {
		return nil, wrap("accounts", err)
	}
	return out, nil
}

// UpdateAccount changes an account's name and/or spend cap; nil leaves a field as it is.
func (s *Store) UpdateAccount(id string, name *string, spendCapCents *int64) (store.Account, error) {
	return s.updateAccount("update account", id, func(acct *store.Account) (string, []any, error) {
		if name != nil {
			acct.Name = *name
		}
		if spendCapCents != nil {
			acct.SpendCapCents = *spendCapCents
		}
		if err := store.ValidateAccount(acct.Name, acct.SpendCapCents); err != nil {
			return "", nil, err
		}
		acct.Name = strings.TrimSpace(acct.Name)
		return `UPDATE accounts SET name = $2, spend_cap_cents = $3 WHERE id = $1`, []any{acct.Name, acct.SpendCapCents}, nil
	})
}

// updateAccount locks the account's row, lets change modify it and name the UPDATE (its $1 is
// the id, then args) that stores the change, and returns the account with its spend.
func (s *Store) updateAccount(op, id string, change func(acct *store.Account) (update string, args []any, err error)) (store.Account, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var acct store.Account
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if acct, err = scanAccount(tx.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1 FOR UPDATE`, id)); err != nil {
			return err
		}
		update, args, err := change(&acct)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, update, append([]any{id}, args...)...); err != nil {
			return err
		}
		accts := []store.Account{acct}
		err = loadSpend(ctx, tx, accts)
		acct = accts[0]
		return err
	})
	if err != nil {
		return store.Account{}, wrap(op, err)
	}
	return acct, nil
}

const keyCols = `id, account_id, prefix, hash, created_at, revoked_at, presets_only`

// keyTargets are k's fields in keyCols' order, for a Scan.
func keyTargets(k *store.APIKey) []any {
	return []any{&k.ID, &k.AccountID, &k.Prefix, &k.Hash, &k.CreatedAt, &k.RevokedAt, &k.PresetsOnly}
}

func scanKey(row pgx.Row) (store.APIKey, error) {
	var k store.APIKey
	err := row.Scan(keyTargets(&k)...)
	if isNoRows(err) {
		return store.APIKey{}, store.ErrNotFound
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.RevokedAt = utcPtr(k.RevokedAt)
	return k, err
}

// createKey inserts a new key for an existing account in tx (ErrNotFound otherwise).
func createKey(ctx context.Context, tx pgx.Tx, accountID string, o store.KeyOptions) (store.APIKey, string, error) {
	secret := store.NewKeySecret()
	hash := store.HashKey(secret)
	key, err := scanKey(tx.QueryRow(ctx, `INSERT INTO api_keys (id, account_id, prefix, hash, created_at, presets_only)
		SELECT $1, $2, $3, $4, now(), $5 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $2) RETURNING `+keyCols,
		store.NewKeyID(), accountID, secret[:store.KeyDisplayPrefixLen], hash[:], o.PresetsOnly))
	if err != nil {
		return store.APIKey{}, "", err
	}
	return key, secret, nil
}

// CreateKey issues a new live key for the account and returns its record and the secret,
// which is never stored (only its SHA-256) and cannot be shown again.
func (s *Store) CreateKey(accountID string) (store.APIKey, string, error) {
	return s.CreateKeyWith(accountID, store.KeyOptions{})
}

// CreateKeyWith is CreateKey with limits on what the key may do.
func (s *Store) CreateKeyWith(accountID string, o store.KeyOptions) (store.APIKey, string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var key store.APIKey
	var secret string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		key, secret, err = createKey(ctx, tx, accountID, o)
		return err
	})
	if err != nil {
		return store.APIKey{}, "", wrap("create key", err)
	}
	return key, secret, nil
}

// Keys lists an account's keys, oldest first.
func (s *Store) Keys(accountID string) ([]store.APIKey, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var out []store.APIKey
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE id = $1)`, accountID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return store.ErrNotFound
		}
		rows, err := tx.Query(ctx, `SELECT `+keyCols+` FROM api_keys WHERE account_id = $1 ORDER BY seq`, accountID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.APIKey, error) { return scanKey(row) })
		return err
	})
	if err != nil {
		return nil, wrap("keys", err)
	}
	return out, nil
}

// RevokeKey revokes a key; revoking it again changes nothing. No node caches keys, so the
// revocation holds on every node as soon as it returns.
func (s *Store) RevokeKey(keyID string) (store.APIKey, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	key, err := scanKey(s.pool.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
		WHERE id = $1 RETURNING `+keyCols, keyID))
	if err != nil {
		return store.APIKey{}, wrap("revoke key", err)
	}
	s.keys.drop(key.Hash) // not needed (the gate reads the key), but this node need not try it
	return key, nil
}

// Authenticate resolves a live key to its record by the SHA-256 of the secret. A malformed,
// unknown or revoked key is ErrUnauthorized.
func (s *Store) Authenticate(secret string) (store.APIKey, error) {
	if err := store.ParseKey(secret); err != nil {
		return store.APIKey{}, fmt.Errorf("%w: %w", store.ErrUnauthorized, err)
	}
	hash := store.HashKey(secret)
	ctx, cancel := s.ctx()
	defer cancel()
	key, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE hash = $1`, hash[:]))
	if err == store.ErrNotFound {
		return store.APIKey{}, store.ErrUnauthorized
	} else if err != nil {
		return store.APIKey{}, wrap("authenticate", err)
	}
	if key.RevokedAt != nil {
		return store.APIKey{}, fmt.Errorf("%w: key revoked", store.ErrUnauthorized)
	}
	return key, nil
}

// AuthenticateJob is Authenticate and then Job for the key's account in one statement, one
// round trip for a GET of a job (httpapi.Store). err is the key's, as Authenticate
// answers it; when the key is live, jobErr is the job's, as Job answers it. The statement
// joins the job to the key by its account, so a live key with its account's live job (a
// poll, the common case) is one row; only the job's id can pick an index (as ownLiveJob), so a
// plan made while jobs was small never walks the account's jobs. No row means an unknown key or no such job of the key's
// account; Authenticate then tells the two apart, one more round trip on those error paths.
func (s *Store) AuthenticateJob(secret, jobID string) (key store.APIKey, job store.Job, jobErr, err error) {
	if err := store.ParseKey(secret); err != nil {
		return store.APIKey{}, store.Job{}, nil, fmt.Errorf("%w: %w", store.ErrUnauthorized, err)
	}
	hash := store.HashKey(secret)
	ctx, cancel := s.ctx()
	defer cancel()
	row := s.pool.QueryRow(ctx, `SELECT `+jobCols+`, k_id, k_account_id, k_prefix, k_hash, k_created_at, k_revoked_at, k_presets_only
		FROM jobs, (SELECT id AS k_id, account_id AS k_account_id, prefix AS k_prefix, hash AS k_hash,
				created_at AS k_created_at, revoked_at AS k_revoked_at, presets_only AS k_presets_only
			FROM api_keys WHERE hash = $2) k
		WHERE id = $1 AND (account_id = k_account_id AND expires_at > now()) IS TRUE`, jobID, hash[:])
	job, err = scanJob(extraRow{row: row, extra: keyTargets(&key)})
	switch {
	case err == store.ErrNotFound:
		if key, err = s.Authenticate(secret); err != nil {
			return store.APIKey{}, store.Job{}, nil, err
		}
		return key, store.Job{}, store.ErrNotFound, nil
	case err != nil:
		return store.APIKey{}, store.Job{}, nil, wrap("authenticate job", err)
	case key.RevokedAt != nil:
		return store.APIKey{}, store.Job{}, nil, fmt.Errorf("%w: key revoked", store.ErrUnauthorized)
	}
	key.CreatedAt = key.CreatedAt.UTC()
	return key, job, nil, nil
}

// EnsureDefaultAccount creates account "default" and one key when the database has no
// account, under an advisory lock so that nodes starting together create it once. It returns
// the new key's secret, or "" when accounts already existed.
func (s *Store) EnsureDefaultAccount(spendCapCents int64) (store.Account, string, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var acct store.Account
	var secret string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		acct, secret = store.Account{}, ""
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockDefaultAccount); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts)`).Scan(&exists); err != nil || exists {
			return err
		}
		var err error
		acct, err = scanAccount(tx.QueryRow(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at)
			VALUES ($1, $2, $3, now()) RETURNING `+accountCols, store.NewAccountID(), store.DefaultAccountName, spendCapCents))
		if err != nil {
			return err
		}
		_, secret, err = createKey(ctx, tx, acct.ID, store.KeyOptions{})
		return err
	})
	if err != nil {
		return store.Account{}, "", wrap("ensure default account", err)
	}
	return acct, secret, nil
}

// AllowWrite counts one write against the key's rolling window of the given length and
// reports whether it is allowed: at most limit writes in any window, exact across every node
// (one statement, serialised by the key's row lock, on the database's clock). remaining is how
// many more the window takes now; reset is when the oldest counted write leaves it.
func (s *Store) AllowWrite(keyID string, limit int, window time.Duration) (allowed bool, remaining int, reset time.Duration, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var w rateCount
	err = s.pool.QueryRow(ctx, `SELECT `+rateCountCols+` FROM convsvc_count_write($1, $2, $3) c`, keyID, limit, micros(window)).
		Scan(&w.count, &w.oldest, &w.now, &w.resetUS)
	if err != nil {
		return false, 0, 0, wrap("rate window", err)
	}
	allowed, remaining, reset = w.result(limit, window)
	return allowed, remaining, reset, nil
}

// rateCountCols are convsvc_count_write's results (migration 0026, the function aliased c),
// which count one write in the key's window as convsvc_write_gate does: the count after it
// (NULL: refused, nothing counted), the oldest time in the window, the clock read for it, and
// for a refusal the microseconds until the oldest leaves the window.
const rateCountCols = `c.o_count, c.o_oldest, c.o_now, c.o_reset_us`

// rateCount is one row of rateCountCols.
type rateCount struct {
	count       *int
	oldest, now *time.Time
	resetUS     *int64
}

// result is the write's verdict: allowed, with the remaining writes and the reset, or refused
// with the reset.
func (w rateCount) result(limit int, window time.Duration) (allowed bool, remaining int, reset time.Duration) {
	if w.count == nil {
		var us int64
		if w.resetUS != nil {
			us = *w.resetUS
		}
		return false, 0, time.Duration(us) * time.Microsecond
	}
	return true, limit - *w.count, w.oldest.Add(window).Sub(*w.now)
}

// PurgeRateWindows deletes the windows of keys with no write inside the last window, so the
// table holds only keys that wrote recently; the sweeper calls it now and then. An empty
// window (a key revoked before its first write: migration 0029) goes too.
func (s *Store) PurgeRateWindows(window time.Duration) (int, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM rate_windows
		WHERE coalesce(times[cardinality(times)], '-infinity') <= clock_timestamp() - $1 * interval '1 microsecond'`, micros(window))
	if err != nil {
		return 0, wrap("purge rate windows", err)
	}
	return int(tag.RowsAffected()), nil
}
