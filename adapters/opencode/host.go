// Package opencode drives OpenCode through its HTTP server, the real program
// `opencode serve`, and implements core.BridgeHost.
//
// One Host runs at most one server process (`opencode serve --hostname
// 127.0.0.1 --port <free port>`), started lazily by the first call that
// needs it and shared by every session the Host opens; sessions of several
// working directories share it through the API's ?directory= parameter.
// The Host follows the server's GET /global/event stream (reconnecting when
// it drops) and routes each event to the live session it names. If the
// server dies, every live session's Done closes and Exit reports the exit
// code and the tail of its stderr; the next call that needs a server starts
// a new one. Host.Close stops the server; closing a live session only
// detaches it.
//
// Sessions are server-side records in OpenCode's own database under
// $XDG_DATA_HOME/opencode, so a new Host (a new server process on the same
// data directory) resumes them natively (core.NativeResumer).
package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// Config configures a Host.
type Config struct {
	// Command is the OpenCode program (default "opencode", found on PATH).
	Command string
	// Args are extra arguments after `serve --hostname 127.0.0.1 --port N`.
	Args []string
	// Env is appended to os.Environ() (after the Home and ConfigJSON
	// variables, so it wins).
	Env []string
	// Presets are configured presets offered besides the server's agents.
	Presets []core.Preset
	// Home, when set, isolates the server: HOME and XDG_{DATA,CONFIG,CACHE,
	// STATE}_HOME are set to directories under it (created as needed), and
	// the server runs in it.
	Home string
	// ConfigJSON is OpenCode configuration (for example a custom provider):
	// JSON content (passed as OPENCODE_CONFIG_CONTENT) or a file path
	// (passed as OPENCODE_CONFIG).
	ConfigJSON string
	// CopyDir is a private folder (under Bridge's data directory) where
	// discovery copies OpenCode's database before reading it; "" disables
	// reading the database.
	CopyDir string
	// StartTimeout bounds the wait for a new server to answer (default 90s).
	StartTimeout time.Duration
	// TurnGrace bounds how long Prompt and Compact wait, after the server
	// has answered, for the session.idle event that guarantees every event
	// of the turn has reached the sink (default 10s).
	TurnGrace time.Duration
}

// Host is the OpenCode adapter. Create it with New.
type Host struct {
	cfg    Config
	client *http.Client

	startMu sync.Mutex // serialises server starts
	mu      sync.Mutex
	srv     *server
	lives   map[string]map[*live]struct{} // native session id -> live sessions
	closed  bool
	fork    forkServer // the server forks run on (forkserver.go), under mu

	replMu  sync.Mutex       // serialises replication to the fork server (replica.go)
	replSrv *server          // the fork server replSeq describes
	replSeq map[string]int64 // session id -> last event seq its replica holds

	limitsMu sync.Mutex
	limits   map[string]int64 // "provider/model" -> limit.context, once read
}

// contextLimit returns a model's context window ("provider/model") from
// OpenCode's provider configuration (GET /config/providers, read once per
// Host; a failed read is tried again on the next call), or 0 when it is
// not known.
func (h *Host) contextLimit(model string) int64 {
	h.limitsMu.Lock()
	defer h.limitsMu.Unlock()
	if h.limits == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		models, err := h.Models(ctx)
		cancel()
		if err != nil {
			return 0
		}
		h.limits = map[string]int64{}
		for _, m := range models {
			h.limits[m.ID] = m.ContextWindow
		}
	}
	return h.limits[model]
}

var (
	_ core.BridgeHost    = (*Host)(nil)
	_ core.NativeResumer = (*Host)(nil)
	_ core.Importer      = (*Host)(nil)
)

// New returns a Host; no process starts until a call needs the server.
func New(cfg Config) *Host {
	if cfg.Command == "" {
		cfg.Command = "opencode"
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 90 * time.Second
	}
	if cfg.TurnGrace <= 0 {
		cfg.TurnGrace = 10 * time.Second
	}
	h := &Host{cfg: cfg, client: &http.Client{}, lives: map[string]map[*live]struct{}{}}
	h.fork.ctx, h.fork.stop = context.WithCancel(context.Background())
	return h
}

// Harness returns "opencode".
func (h *Host) Harness() string { return harnessName }

// binary resolves the OpenCode program.
func (h *Host) binary() (string, error) {
	p, err := exec.LookPath(h.cfg.Command)
	if err != nil {
		return "", core.E(core.CodeUnavailable,
			fmt.Sprintf("opencode: harness program %q not found (install opencode-ai or configure its path)", h.cfg.Command), err)
	}
	return p, nil
}

// ensureServer returns the running server, starting one if there is none or
// the last one died. The first event stream is connected before it returns.
func (h *Host) ensureServer(ctx context.Context) (*server, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, core.Errorf(core.CodeUnavailable, "opencode: host is closed")
	}
	if s := h.srv; s != nil && !s.dead() {
		h.mu.Unlock()
		return s, nil
	}
	h.mu.Unlock()

	h.startMu.Lock()
	defer h.startMu.Unlock()
	h.mu.Lock()
	if s := h.srv; s != nil && !s.dead() {
		h.mu.Unlock()
		return s, nil
	}
	h.mu.Unlock()
	s, err := h.startServer(ctx, h.cfg.StartTimeout)
	if err != nil {
		return nil, err
	}
	if err := h.follow(ctx, s); err != nil {
		s.kill(context.Background())
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.kill(context.Background())
		return nil, core.Errorf(core.CodeUnavailable, "opencode: host is closed")
	}
	h.srv = s
	h.mu.Unlock()
	return s, nil
}

// attach makes the host use an already running server at base (tests and
// benchmarks that stand in for `opencode serve`).
func (h *Host) attach(ctx context.Context, base string) (*server, error) {
	sctx, cancel := context.WithCancel(context.Background())
	s := &server{base: strings.TrimRight(base, "/"), done: make(chan struct{}), ctx: sctx, cancel: cancel, stderr: &procutil.Tail{}}
	if err := h.follow(ctx, s); err != nil {
		cancel()
		return nil, err
	}
	h.mu.Lock()
	h.srv = s
	h.mu.Unlock()
	return s, nil
}

// follow starts the event stream of s and waits for its first connection.
func (h *Host) follow(ctx context.Context, s *server) error {
	first := make(chan struct{})
	var once sync.Once
	go streamEvents(s.ctx, h.client, s.base+"/global/event",
		func(ev event) { h.dispatch(s, ev) },
		func() {
			once.Do(func() { close(first) })
			h.resync(s)
		},
		func(error) {})
	t := time.NewTimer(h.cfg.StartTimeout)
	defer t.Stop()
	select {
	case <-first:
		return nil
	case <-s.done:
		return s.exitError()
	case <-ctx.Done():
		return core.E(core.CodeCancelled, "opencode: subscribing to events", ctx.Err())
	case <-t.C:
		return core.Errorf(core.CodeTimeout, "opencode: event stream did not open within %s", h.cfg.StartTimeout)
	}
}

// dispatch routes one event of server s to the live sessions it names
// that run on s: the fork server (forkserver.go) shares the live server's
// database and may publish events about the live server's sessions.
func (h *Host) dispatch(s *server, ev event) {
	sid := ev.sessionID()
	if sid == "" {
		return
	}
	h.mu.Lock()
	set := h.lives[sid]
	targets := make([]*live, 0, len(set))
	for l := range set {
		if l.srv == s {
			targets = append(targets, l)
		}
	}
	h.mu.Unlock()
	for _, l := range targets {
		l.onEvent(ev)
	}
}

// resync tells every live session on s that its stream (re)connected, so
// a turn whose idle event may have been missed re-checks the session status.
func (h *Host) resync(s *server) {
	h.mu.Lock()
	var all []*live
	for _, set := range h.lives {
		for l := range set {
			if l.srv == s {
				all = append(all, l)
			}
		}
	}
	h.mu.Unlock()
	for _, l := range all {
		l.resync()
	}
}

func (h *Host) register(l *live) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lives[l.id] == nil {
		h.lives[l.id] = map[*live]struct{}{}
	}
	h.lives[l.id][l] = struct{}{}
}

func (h *Host) unregister(l *live) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.lives[l.id], l)
	if len(h.lives[l.id]) == 0 {
		delete(h.lives, l.id)
	}
}

// Close stops the server process (live sessions' Done close) and the fork
// server (a start under way included), and refuses further calls.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	s, f := h.srv, h.fork.srv
	h.mu.Unlock()
	h.fork.stop()
	if f != nil {
		f.kill(ctx)
	}
	if s != nil {
		s.kill(ctx)
	}
	done := make(chan struct{})
	go func() { h.fork.starting.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// dirQuery is the ?directory= query of a session route.
func dirQuery(dir string) url.Values {
	if dir == "" {
		return nil
	}
	return url.Values{"directory": {dir}}
}

// sessionInfo is the subset of OpenCode's Session the adapter reads.
type sessionInfo struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
	Agent     string `json:"agent"`
	Model     *struct {
		ID         string `json:"id"`
		ProviderID string `json:"providerID"`
		Variant    string `json:"variant"`
	} `json:"model"`
	Time struct {
		Created  int64  `json:"created"`
		Updated  int64  `json:"updated"`
		Archived *int64 `json:"archived"`
	} `json:"time"`
}

// CreateSession creates a session (POST /session?directory=cwd).
func (h *Host) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	s, err := h.ensureServer(ctx)
	if err != nil {
		return nil, err
	}
	body := createSessionBody{Title: req.Title, Agent: req.Preset.Agent}
	model := req.Model
	if model == "" {
		model = req.Preset.Model
	}
	provider, modelID := splitModel(model)
	effort := req.Effort
	if effort == "" {
		effort = req.Preset.Effort
	}
	if provider != "" && modelID != "" {
		body.Model = &modelSpec{ID: modelID, ProviderID: provider, Variant: effort}
	}
	var info sessionInfo
	if err := h.do(ctx, s, http.MethodPost, "/session", dirQuery(req.Cwd), body, &info); err != nil {
		return nil, domainError(s, "create session", err)
	}
	if info.ID == "" {
		return nil, core.Errorf(core.CodeHarness, "opencode: create session: the server answered without a session id")
	}
	dir := req.Cwd
	if dir == "" {
		dir = info.Directory
	}
	l := h.newLive(s, info.ID, dir, sink)
	l.mu.Lock()
	l.provider, l.model, l.agent, l.variant = provider, modelID, body.Agent, effort
	l.req = req
	l.mu.Unlock()
	return l, nil
}

// Resume resumes a session stored by OpenCode (native: the session exists
// on the server, GET /session/{id}); otherwise it returns a
// *core.ResumeError carrying the server's own error text.
func (h *Host) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	s, err := h.ensureServer(ctx)
	if err != nil {
		return nil, &core.ResumeError{NativeText: err.Error(), Err: err}
	}
	if req.NativeID == "" {
		err := core.Errorf(core.CodeInvalid, "opencode: resume needs a session id")
		return nil, &core.ResumeError{NativeText: "no session id", Err: err}
	}
	var info sessionInfo
	if err := h.do(ctx, s, http.MethodGet, "/session/"+url.PathEscape(req.NativeID), nil, nil, &info); err != nil {
		text := err.Error()
		var he *httpError
		if errors.As(err, &he) {
			text = he.serverText()
		}
		return nil, &core.ResumeError{NativeText: text, Err: domainError(s, "resume session "+req.NativeID, err)}
	}
	if info.ID != req.NativeID {
		err := core.Errorf(core.CodeHarness, "opencode: resume asked for %s, the server answered %s", req.NativeID, info.ID)
		return nil, &core.ResumeError{NativeText: err.Message, Err: err}
	}
	dir := req.Cwd
	if dir == "" {
		dir = info.Directory
	}
	l := h.newLive(s, info.ID, dir, sink)
	l.mu.Lock()
	defer l.mu.Unlock()
	model := req.Model
	if model == "" {
		model = req.Preset.Model
	}
	l.provider, l.model = splitModel(model)
	if l.model == "" && info.Model != nil {
		l.provider, l.model = info.Model.ProviderID, info.Model.ID
	}
	l.agent = req.Preset.Agent
	l.variant = req.Effort
	l.req = req.CreateRequest
	return l, nil
}

// ListSessions lists OpenCode's sessions (GET /session), only those of cwd
// when cwd is set, newest first.
func (h *Host) ListSessions(ctx context.Context, cwd string) ([]core.HostSession, error) {
	s, err := h.ensureServer(ctx)
	if err != nil {
		return nil, err
	}
	var list []sessionInfo
	if err := h.do(ctx, s, http.MethodGet, "/session", dirQuery(cwd), nil, &list); err != nil {
		return nil, domainError(s, "list sessions", err)
	}
	out := make([]core.HostSession, 0, len(list))
	for _, si := range list {
		if cwd != "" && si.Directory != cwd {
			continue
		}
		out = append(out, core.HostSession{NativeID: si.ID, Title: si.Title, Cwd: si.Directory,
			UpdatedAt: time.UnixMilli(si.Time.Updated).UTC()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

// History reads a session's stored messages (GET /session/{id}/message).
func (h *Host) History(ctx context.Context, nativeID string) ([]core.NewEntry, error) {
	s, err := h.ensureServer(ctx)
	if err != nil {
		return nil, err
	}
	var msgs []storedMessage
	if err := h.do(ctx, s, http.MethodGet, "/session/"+url.PathEscape(nativeID)+"/message", nil, nil, &msgs); err != nil {
		return nil, domainError(s, "session history", err)
	}
	return messagesEntries(msgs), nil
}

// Models lists the configured providers' models (GET /config/providers) as
// "provider/model".
func (h *Host) Models(ctx context.Context) ([]core.Model, error) {
	s, err := h.ensureServer(ctx)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Providers []struct {
			ID     string `json:"id"`
			Models map[string]struct {
				ID           string `json:"id"`
				Name         string `json:"name"`
				Capabilities struct {
					Input struct {
						Image bool `json:"image"`
					} `json:"input"`
				} `json:"capabilities"`
				Variants map[string]json.RawMessage `json:"variants"`
				Limit    struct {
					Context int64 `json:"context"`
				} `json:"limit"`
			} `json:"models"`
		} `json:"providers"`
	}
	if err := h.do(ctx, s, http.MethodGet, "/config/providers", nil, nil, &resp); err != nil {
		return nil, domainError(s, "list models", err)
	}
	var out []core.Model
	for _, p := range resp.Providers {
		for key, m := range p.Models {
			id := m.ID
			if id == "" {
				id = key
			}
			mod := core.Model{ID: modelName(p.ID, id), Name: m.Name, Vision: m.Capabilities.Input.Image, ContextWindow: m.Limit.Context}
			for v := range m.Variants {
				mod.Efforts = append(mod.Efforts, v)
			}
			sort.Strings(mod.Efforts)
			out = append(out, mod)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Workspaces lists the directories OpenCode's sessions ran in.
func (h *Host) Workspaces(ctx context.Context) ([]core.Workspace, error) {
	list, err := h.ListSessions(ctx, "")
	if err != nil {
		return nil, err
	}
	cwds := make([]string, len(list))
	for i, s := range list {
		cwds[i] = s.Cwd
	}
	return core.WorkspacesOf(cwds), nil
}

// ArchiveSession archives a session (PATCH /session/{id} time.archived).
func (h *Host) ArchiveSession(ctx context.Context, nativeID string) error {
	s, err := h.ensureServer(ctx)
	if err != nil {
		return err
	}
	var body archiveBody
	body.Time.Archived = time.Now().UnixMilli()
	if err := h.do(ctx, s, http.MethodPatch, "/session/"+url.PathEscape(nativeID), nil, body, nil); err != nil {
		return domainError(s, "archive session", err)
	}
	return nil
}

// Presets lists the configured presets, then the server's selectable agents
// (GET /agent: primary agents that are not hidden) as presets.
func (h *Host) Presets(ctx context.Context) ([]core.Preset, error) {
	out := core.PresetsFor(h.cfg.Presets, harnessName)
	s, err := h.ensureServer(ctx)
	if err != nil {
		return nil, err
	}
	var agents []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Mode        string `json:"mode"`
		Hidden      bool   `json:"hidden"`
		Variant     string `json:"variant"`
		Model       *struct {
			ModelID    string `json:"modelID"`
			ProviderID string `json:"providerID"`
		} `json:"model"`
	}
	if err := h.do(ctx, s, http.MethodGet, "/agent", nil, nil, &agents); err != nil {
		return nil, domainError(s, "list agents", err)
	}
	for _, a := range agents {
		if a.Hidden || a.Mode == "subagent" {
			continue
		}
		p := core.Preset{Name: a.Name, Harness: harnessName, Description: a.Description, Agent: a.Name, Effort: a.Variant}
		if a.Model != nil {
			p.Model = modelName(a.Model.ProviderID, a.Model.ModelID)
		}
		out = append(out, p)
	}
	return out, nil
}
