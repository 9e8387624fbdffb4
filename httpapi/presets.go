package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/store"
)

// CodePresetsOnly refuses a create without a preset from a key limited to presets.
const CodePresetsOnly = "presets_only"

// PresetStore is what the preset endpoints need from the job database (both stores).
type PresetStore interface {
	PutPreset(p store.Preset) (store.Preset, bool, error)
	Preset(name string) (store.Preset, error)
	Presets() ([]store.Preset, error)
	DeletePreset(name string) error
	CreateKeyWith(accountID string, o store.KeyOptions) (store.APIKey, string, error)
}

// presetView is a preset as the admin API shows it.
type presetView struct {
	Name         string          `json:"name"`
	TargetFormat string          `json:"target_format"`
	Options      convert.Options `json:"options"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

func viewPreset(p store.Preset) presetView {
	v := presetView{Name: p.Name, TargetFormat: p.TargetFormat, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if len(p.Options) > 0 {
		_ = json.Unmarshal(p.Options, &v.Options) // written by handlePutPreset from these options
	}
	return v
}

// presetRequest is the body of PUT /v1/admin/presets/{name}.
type presetRequest struct {
	TargetFormat *string          `json:"target_format"`
	Options      *convert.Options `json:"options"`
}

func (s *Server) handlePutPreset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var req presetRequest
	body, err := readJSONBody(w, r)
	if err == nil {
		err = decodeStrict(body, &req)
	}
	if err == nil && (req.TargetFormat == nil || *req.TargetFormat == "") {
		err = errorf(CodeInvalidRequest, "target_format is required: a format id from GET /v1/formats")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := ps.ByName("name")
	if err := store.ValidatePresetName(name); err != nil {
		s.writeError(w, r, &Error{Code: CodeInvalidRequest, Message: strings.TrimPrefix(err.Error(), store.ErrInvalidArgument.Error()+": "), Err: err})
		return
	}
	target, ok := s.cfg.Catalog.Format(*req.TargetFormat)
	if !ok {
		s.writeError(w, r, errorf(CodeUnsupportedFormat, fmt.Sprintf("%q is not a format id; GET /v1/formats lists them", *req.TargetFormat)))
		return
	}
	if len(s.cfg.Catalog.Sources(target.ID)) == 0 {
		s.writeError(w, r, errorf(CodeUnsupportedFormat, fmt.Sprintf("nothing converts to %s", target.ID)))
		return
	}
	var opts convert.Options
	if req.Options != nil {
		opts = *req.Options
	}
	if err := opts.Validate(target); err != nil {
		s.writeError(w, r, &Error{Code: CodeInvalidRequest, Message: err.Error(), Err: err})
		return
	}
	var raw json.RawMessage
	if !opts.IsZero() {
		raw, _ = json.Marshal(opts)
	}
	p, created, err := s.cfg.Store.PutPreset(store.Preset{Name: name, TargetFormat: target.ID, Options: raw})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, viewPreset(p))
}

func (s *Server) handleGetPreset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, err := s.cfg.Store.Preset(ps.ByName("name"))
	if err != nil {
		s.writeError(w, r, notFound(err, "no such preset"))
		return
	}
	writeJSON(w, http.StatusOK, viewPreset(p))
}

func (s *Server) handleListPresets(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	list, err := s.cfg.Store.Presets()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := listView[presetView]{Data: []presetView{}}
	for _, p := range list {
		out.Data = append(out.Data, viewPreset(p))
	}
	writeJSON(w, http.StatusOK, out)
}

// handleDeletePreset removes a preset and answers with it, as it was.
func (s *Server) handleDeletePreset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, err := s.cfg.Store.Preset(ps.ByName("name"))
	if err == nil {
		err = s.cfg.Store.DeletePreset(p.Name)
	}
	if err != nil {
		s.writeError(w, r, notFound(err, "no such preset"))
		return
	}
	writeJSON(w, http.StatusOK, viewPreset(p))
}

// createPreset takes create's "preset" and, when it names one, returns the job's target and
// options from it: a target_format given too must be the preset's, and options may not be
// given (a preset's job runs exactly the preset). A key limited to presets must name one.
func (s *Server) createPreset(preset *string, key store.APIKey, target *string, opts *convert.Options) (string, error) {
	if preset == nil || *preset == "" {
		if key.PresetsOnly {
			return "", errorf(CodePresetsOnly, "this API key may only create jobs from a preset: name one in \"preset\" (the operator defines them)")
		}
		if preset != nil {
			return "", errorf(CodeInvalidRequest, "preset is empty: name a preset, or leave preset out")
		}
		return "", nil
	}
	name := *preset
	p, err := s.cfg.Store.Preset(name)
	if errors.Is(err, store.ErrNotFound) {
		return "", &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("preset %q does not exist", name), Err: err}
	} else if err != nil {
		return "", err
	}
	if *target != "" && *target != p.TargetFormat {
		return "", errorf(CodeInvalidRequest, fmt.Sprintf("target_format %s differs from preset %q's %s: leave target_format out or give the preset's", *target, name, p.TargetFormat))
	}
	if !opts.IsZero() {
		return "", errorf(CodeInvalidRequest, fmt.Sprintf("options (%s) may not be given with a preset: preset %q sets the job's options", strings.Join(opts.Names(), ", "), name))
	}
	*target = p.TargetFormat
	*opts = convert.Options{}
	if len(p.Options) > 0 {
		if err := json.Unmarshal(p.Options, opts); err != nil {
			return "", fmt.Errorf("preset %s: options: %w", name, err)
		}
	}
	return name, nil
}
