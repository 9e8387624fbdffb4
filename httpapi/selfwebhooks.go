package httpapi

import (
	"errors"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
)

// An account's own API key manages its webhook endpoints and signing secret here, with the
// admin endpoints' code scoped to the key's account: another account's endpoint is 404
// not_found, writes spend the key's write budget and reads its read budget.

func (s *Server) handleSelfCreateWebhook(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
	s.createWebhook(w, r, key.AccountID)
}

func (s *Server) handleSelfListWebhooks(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
	s.listWebhooks(w, r, key.AccountID)
}

func (s *Server) handleSelfDeleteWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	s.deleteWebhook(w, r, key.AccountID, ps.ByName("id"))
}

func (s *Server) handleSelfRotateWebhook(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
	s.rotateWebhook(w, r, key.AccountID, ps.ByName("id"))
}

func (s *Server) handleSelfRotateSecret(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
	s.rotateSigningSecret(w, r, key.AccountID)
}

// handleSelfGetSecret shows whether the account has a signing secret, its prefix, and the
// replaced one's prefix and end while a rotation's overlap lasts; never a secret.
func (s *Server) handleSelfGetSecret(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
	if !s.webhooksEnabled(w, r) {
		return
	}
	rec, err := s.cfg.Webhooks.WebhookSigningSecret(key.AccountID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusOK, signingSecretView{AccountID: key.AccountID})
	case err != nil:
		s.writeError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, viewSigningSecret(rec, s.now()))
	}
}

// routeSelfWebhooks registers the endpoints an account's own key manages its webhooks with.
func (s *Server) routeSelfWebhooks(handle func(method, path string, h httprouter.Handle)) {
	handle("POST", "/v1/webhooks", s.withKey(true, s.handleSelfCreateWebhook))
	handle("GET", "/v1/webhooks", s.withKey(false, s.handleSelfListWebhooks))
	handle("DELETE", "/v1/webhooks/:id", s.withKey(true, s.handleSelfDeleteWebhook))
	handle("POST", "/v1/webhooks/:id/rotate-secret", s.withKey(true, s.handleSelfRotateWebhook))
	handle("GET", "/v1/webhook-secret", s.withKey(false, s.handleSelfGetSecret))
	handle("POST", "/v1/webhook-secret", s.withKey(true, s.handleSelfRotateSecret))
}
