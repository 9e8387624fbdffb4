package pgstore

import "github.com/convsvc/convsvc/store"

// AccountsPage returns a page of the accounts, oldest first, and whether more follow; an
// unknown StartingAfter is store.ErrNotFound, as on bbolt.
func (s *Store) AccountsPage(p store.PageParams) ([]store.Account, bool, error) {
	accts, err := s.Accounts()
	if err != nil {
		return nil, false, err
	}
	return store.Page(accts, p, func(a store.Account) string { return a.ID })
}

// KeysPage returns a page of an account's keys, oldest first, and whether more follow.
func (s *Store) KeysPage(accountID string, p store.PageParams) ([]store.APIKey, bool, error) {
	keys, err := s.Keys(accountID)
	if err != nil {
		return nil, false, err
	}
	return store.Page(keys, p, func(k store.APIKey) string { return k.ID })
}
