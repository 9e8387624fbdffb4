package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/convert"
)

// formatDetailView is a Format with what it converts to and from.
type formatDetailView struct {
	convert.Format
	Targets []string `json:"targets"`
	Sources []string `json:"sources"`
	// Options lists the conversion options accepted when this format is the target.
	Options []string `json:"options"`
}

func (s *Server) handleFormats(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	formats := s.cfg.Catalog.Formats()
	if formats == nil {
		formats = []convert.Format{}
	}
	writeJSON(w, http.StatusOK, formats)
}

func (s *Server) handleFormat(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	f, ok := s.cfg.Catalog.Format(ps.ByName("id"))
	if !ok {
		s.writeError(w, r, errorf(CodeNotFound, "no such format; GET /v1/formats lists them"))
		return
	}
	v := formatDetailView{Format: f, Targets: s.cfg.Catalog.Targets(f.ID), Sources: s.cfg.Catalog.Sources(f.ID)}
	if v.Targets == nil {
		v.Targets = []string{}
	}
	if v.Sources == nil {
		v.Sources = []string{}
	}
	v.Options = f.Options
	if v.Options == nil {
		v.Options = []string{}
	}
	writeJSON(w, http.StatusOK, v)
}

type healthView struct {
	Status string `json:"status"`
}

type readyView struct {
	Status  string         `json:"status"`
	Reasons []string       `json:"reasons"`
	Details map[string]any `json:"details,omitempty"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	writeJSON(w, http.StatusOK, healthView{Status: "ok"})
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var reasons []string
	if s.cfg.Ready != nil {
		reasons = s.cfg.Ready()
	}
	var details map[string]any
	if s.cfg.ReadyDetails != nil {
		details = s.cfg.ReadyDetails()
	}
	if len(reasons) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, readyView{Status: "not_ready", Reasons: reasons, Details: details})
		return
	}
	writeJSON(w, http.StatusOK, readyView{Status: "ready", Reasons: []string{}, Details: details})
}

// handleOpenAPI serves the OpenAPI document with the headers of every other JSON answer, and
// lets caches keep it for five minutes.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = noSniff
	h.Set("Cache-Control", "public, max-age=300")
	w.Write(OpenAPIDocument)
}
