package pgstore

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// defaultPageLimit is the page size when PageParams.Limit is not positive, as in store.Page.
const defaultPageLimit = 20

// pageLimit is p's page size.
func pageLimit(p store.PageParams) int {
	if p.Limit <= 0 {
		return defaultPageLimit
	}
	return p.Limit
}

// errUnknownCursor is store.Page's error for a cursor that names no item of the list.
func errUnknownCursor(after string) error {
	return fmt.Errorf("%w: starting_after %q names no item of the list", store.ErrNotFound, after)
}

// AccountsPage returns a page of the accounts, oldest first (then by creation order), and
// whether more follow; an unknown StartingAfter is store.ErrNotFound, as on bbolt. The page is
// cut in SQL (a row-value comparison after the cursor's row, LIMIT one more than the page), so
// only the page's rows and their monthly spend are read.
func (s *Store) AccountsPage(p store.PageParams) ([]store.Account, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	limit := pageLimit(p)
	var out []store.Account
	more := false
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var rows pgx.Rows
		var err error
		if p.StartingAfter == "" {
			rows, err = tx.Query(ctx, `SELECT `+accountCols+` FROM accounts ORDER BY created_at, seq LIMIT $1`, limit+1)
		} else {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE id = $1)`, p.StartingAfter).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return errUnknownCursor(p.StartingAfter)
			}
			rows, err = tx.Query(ctx, `SELECT `+accountCols+` FROM accounts
				WHERE (created_at, seq) > (SELECT created_at, seq FROM accounts WHERE id = $1)
				ORDER BY created_at, seq LIMIT $2`, p.StartingAfter, limit+1)
		}
		if err != nil {
			return err
		}
		if out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Account, error) { return scanAccount(row) }); err != nil {
			return err
		}
		if len(out) > limit {
			out, more = out[:limit], true
		}
		return loadSpend(ctx, tx, out)
	})
	if err != nil {
		return nil, false, wrap("accounts page", err)
	}
	return out, more, nil
}

// KeysPage returns a page of an account's keys, oldest first, and whether more follow. An
// unknown account, or a StartingAfter that names no key of it, is store.ErrNotFound. The page
// is cut in SQL on the (account_id, seq) index.
func (s *Store) KeysPage(accountID string, p store.PageParams) ([]store.APIKey, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	limit := pageLimit(p)
	var out []store.APIKey
	more := false
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE id = $1)`, accountID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return store.ErrNotFound
		}
		after := int64(0) // seq is an identity column starting at 1
		if p.StartingAfter != "" {
			err := tx.QueryRow(ctx, `SELECT seq FROM api_keys WHERE id = $1 AND account_id = $2`, p.StartingAfter, accountID).Scan(&after)
			if errors.Is(err, pgx.ErrNoRows) {
				return errUnknownCursor(p.StartingAfter)
			}
			if err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT `+keyCols+` FROM api_keys WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
			accountID, after, limit+1)
		if err != nil {
			return err
		}
		if out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.APIKey, error) { return scanKey(row) }); err != nil {
			return err
		}
		if len(out) > limit {
			out, more = out[:limit], true
		}
		return nil
	})
	if err != nil {
		return nil, false, wrap("keys page", err)
	}
	return out, more, nil
}
