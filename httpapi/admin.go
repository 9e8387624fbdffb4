package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
)

// accountView is an account as the admin API shows it.
type accountView struct {
	ID            string         `json:"id"`
	Name          string         `json:"name"`
	SpendCapCents int64          `json:"spend_cap_cents"`
	ReservedCents int64          `json:"reserved_cents"`
	SpentCents    int64          `json:"spent_cents"`
	MonthlySpend  []monthlySpend `json:"monthly_spend"`
	CreatedAt     time.Time      `json:"created_at"`
	MaxRunning    *int64         `json:"max_running"`
	MaxQueued     *int64         `json:"max_queued"`
}

type monthlySpend struct {
	Month      string `json:"month"`
	SpentCents int64  `json:"spent_cents"`
}

type keyView struct {
	ID          string     `json:"id"`
	AccountID   string     `json:"account_id"`
	Prefix      string     `json:"prefix"`
	CreatedAt   time.Time  `json:"created_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
	PresetsOnly bool       `json:"presets_only"`
}

type newKeyView struct {
	keyView
	Key string `json:"key"`
}

// listView is one page of an admin list, shaped like the job list.
type listView[T any] struct {
	Data    []T  `json:"data"`
	HasMore bool `json:"has_more"`
}

// pageParams reads limit (1 to 100, default 20) and starting_after from the query.
func pageParams(r *http.Request) (store.PageParams, error) {
	q := r.URL.Query()
	p := store.PageParams{Limit: 20, StartingAfter: q.Get("starting_after")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return p, errorf(CodeInvalidRequest, "limit must be a whole number from 1 to 100")
		}
		p.Limit = n
	}
	return p, nil
}

func (s *Server) viewAccount(a store.Account) accountView {
	v := accountView{
		ID:            a.ID,
		Name:          a.Name,
		SpendCapCents: a.SpendCapCents,
		ReservedCents: a.ReservedCents,
		SpentCents:    a.SpentCents(s.now()),
		MonthlySpend:  []monthlySpend{},
		CreatedAt:     a.CreatedAt,
		MaxRunning:    a.MaxRunning,
		MaxQueued:     a.MaxQueued,
	}
	for m, c := range a.MonthlySpend {
		v.MonthlySpend = append(v.MonthlySpend, monthlySpend{Month: m, SpentCents: c})
	}
	slices.SortFunc(v.MonthlySpend, func(a, b monthlySpend) int {
		if a.Month < b.Month {
			return -1
		}
		if a.Month > b.Month {
			return 1
		}
		return 0
	})
	return v
}

func viewKey(k store.APIKey) keyView {
	return keyView{ID: k.ID, AccountID: k.AccountID, Prefix: k.Prefix, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt, PresetsOnly: k.PresetsOnly}
}

type accountRequest struct {
	Name          *string `json:"name"`
	SpendCapCents *int64  `json:"spend_cap_cents"`
	// MaxRunning and MaxQueued are read by limits (absent, null or a number).
	MaxRunning json.RawMessage `json:"max_running"`
	MaxQueued  json.RawMessage `json:"max_queued"`
}

func (s *Server) handleCreateAccount(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var req accountRequest
	body, err := readJSONBody(w, r)
	if err == nil {
		err = decodeStrict(body, &req)
	}
	if err == nil && (req.Name == nil || req.SpendCapCents == nil) {
		err = errorf(CodeInvalidRequest, "name and spend_cap_cents are required")
	}
	var limits store.AccountLimits
	var setLimits bool
	if err == nil {
		limits, setLimits, err = req.limits()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	acct, err := s.cfg.Store.CreateAccount(*req.Name, *req.SpendCapCents)
	if err == nil && setLimits {
		acct, err = s.cfg.Store.UpdateAccountLimits(acct.ID, limits)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.viewAccount(acct))
}

func (s *Server) handleListAccounts(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	accts, more, err := s.cfg.Store.AccountsPage(p)
	if errors.Is(err, store.ErrNotFound) {
		s.writeError(w, r, &Error{Code: CodeInvalidRequest, Message: "starting_after names no account", Err: err})
		return
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := listView[accountView]{Data: []accountView{}, HasMore: more}
	for _, a := range accts {
		out.Data = append(out.Data, s.viewAccount(a))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetAccount(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	acct, err := s.cfg.Store.Account(ps.ByName("id"))
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	writeJSON(w, http.StatusOK, s.viewAccount(acct))
}

func (s *Server) handleUpdateAccount(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var req accountRequest
	body, err := readJSONBody(w, r)
	if err == nil {
		err = decodeStrict(body, &req)
	}
	var limits store.AccountLimits
	var setLimits bool
	if err == nil {
		limits, setLimits, err = req.limits()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The limits are checked above, so the second write fails only as a lookup can.
	acct, err := s.cfg.Store.UpdateAccount(ps.ByName("id"), req.Name, req.SpendCapCents)
	if err == nil && setLimits {
		acct, err = s.cfg.Store.UpdateAccountLimits(acct.ID, limits)
	}
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	writeJSON(w, http.StatusOK, s.viewAccount(acct))
}

// keyRequest is the optional body of POST /v1/admin/accounts/{id}/keys.
type keyRequest struct {
	// PresetsOnly limits the key to jobs created from a preset.
	PresetsOnly *bool `json:"presets_only"`
}

func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var req keyRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		if body, err = readJSONBody(w, &http.Request{Header: r.Header, Body: io.NopCloser(bytes.NewReader(body))}); err == nil {
			err = decodeStrict(body, &req)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var key store.APIKey
	var secret string
	if req.PresetsOnly != nil && *req.PresetsOnly {
		key, secret, err = s.cfg.Store.CreateKeyWith(ps.ByName("id"), store.KeyOptions{PresetsOnly: true})
	} else {
		key, secret, err = s.cfg.Store.CreateKey(ps.ByName("id"))
	}
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	writeJSON(w, http.StatusOK, newKeyView{keyView: viewKey(key), Key: secret})
}

func (s *Server) handleListKeys(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, err := pageParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	accountID := ps.ByName("id")
	keys, more, err := s.cfg.Store.KeysPage(accountID, p)
	if errors.Is(err, store.ErrNotFound) && p.StartingAfter != "" {
		if _, aerr := s.cfg.Store.Account(accountID); aerr == nil {
			s.writeError(w, r, &Error{Code: CodeInvalidRequest, Message: "starting_after names no key of this account", Err: err})
			return
		}
	}
	if err != nil {
		s.writeError(w, r, notFound(err, "no such account"))
		return
	}
	out := listView[keyView]{Data: []keyView{}, HasMore: more}
	for _, k := range keys {
		out.Data = append(out.Data, viewKey(k))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleRevokeKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	key, err := s.cfg.Store.RevokeKey(ps.ByName("id"))
	if err != nil {
		s.writeError(w, r, notFound(err, "no such key"))
		return
	}
	writeJSON(w, http.StatusOK, viewKey(key))
}

// notFound gives store.ErrNotFound a message that names what was missing.
func notFound(err error, message string) error {
	if apiErr := asAPIError(err); apiErr.Code == CodeNotFound {
		return &Error{Code: CodeNotFound, Message: message, Err: err}
	}
	return err
}

// handleBackup streams a consistent copy of the database: one read transaction copies it to a
// temporary file, so jobs and the ledger in the copy agree however busy the service is, and
// no transaction waits on a slow client (store.Backup). Restore by stopping the service and
// putting the file at DATA/convsvc.db (docs/operations.md).
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	started := false
	name := "convsvc-" + s.now().UTC().Format("20060102-150405") + ".db"
	n, err := s.cfg.Store.Backup(w, func(size int64) {
		started = true
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
	})
	if err == nil {
		s.log.InfoContext(r.Context(), "database backup sent", "request_id", requestID(r), "bytes", n)
		return
	}
	if !started {
		if errors.Is(err, store.ErrNotSupported) {
			err = &Error{Code: CodeNotImplemented, Err: err, Message: "this server keeps its database in PostgreSQL, " +
				"which GET /v1/admin/backup does not copy: back it up with pg_dump (docs/operations.md)"}
		}
		s.writeError(w, r, err)
		return
	}
	// The status is sent: cut the connection so the client sees a short body, never a
	// complete-looking broken copy.
	s.log.ErrorContext(r.Context(), "database backup broke off", "request_id", requestID(r), "bytes", n, "error", err)
	panic(http.ErrAbortHandler)
}
