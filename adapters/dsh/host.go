// Package dsh drives DeepSeek Harness (DSH) through its web profile's HTTP
// RPC (`dsh web`, POST <BaseURL>/<namespace>.<method> with a client-request
// envelope) and implements core.BridgeHost.
//
// DSH serves the port's thirteen capabilities under the same names
// (session.list … goal.pause), plus goal.clear and session.attachment; a
// manual compaction goes through the typed commands remote
// (commands/execute {agentId, line:"/compact"}). A prompt is accepted
// asynchronously: the live session follows it by reading session.history
// past the last seq it has seen until the turn that holds its own prompt
// (recognised by the rpcId DSH stamps on the user message) ends, mapping each
// new event to entries with native ids "<sessionId>#<seq>", so nothing is
// recorded twice. Sessions live on the DSH server, so a session the server
// still has is resumed natively.
//
// The same mapping reads DSH's durable session log (session.jsonl.zstd,
// several zstd frames appended one after another) for session/import.
//
// The adapter does not start the user's DSH (it needs Node 22): point
// Config.BaseURL at a running `dsh web --host 127.0.0.1 --port P`
// (".../api"). It starts a DSH server of its own for checkpoint forks when
// Config.ForkServer names the program (forkserver.go).
package dsh

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

const harnessName = "dsh"

// Config configures a Host.
type Config struct {
	// BaseURL is the DSH web server's RPC root, e.g.
	// http://127.0.0.1:3181/api (a bare http://host:port gets /api added).
	BaseURL string
	// Headers are sent with every call (DSH 0.1.0-rc.8 needs none; a
	// proxy in front of it may want an Authorization header).
	Headers http.Header
	// Timeout bounds each RPC call (default 30s); a prompt's turn is
	// followed for as long as its context allows.
	Timeout time.Duration
	// ProbeTimeout bounds each read-only call of Probe (default 5s).
	ProbeTimeout time.Duration
	// PollInterval is how often a running turn's history is read
	// (default 500ms, the upstream plugin's command path uses 750ms).
	PollInterval time.Duration
	// Presets are configured presets offered besides DSH's agent presets.
	Presets []core.Preset
	// HTTPClient, when set, is used instead of a client built from Timeout.
	HTTPClient *http.Client
	// ForkServer, when its Command is set, is the DSH server Bridge starts
	// for checkpoint forks (forkserver.go).
	ForkServer ForkServer
}

// Host is the DSH adapter. Create it with New.
type Host struct {
	cfg   Config
	rpc   *client
	forks forkServers
}

var (
	_ core.BridgeHost       = (*Host)(nil)
	_ core.NativeResumer    = (*Host)(nil)
	_ core.Importer         = (*Host)(nil)
	_ core.AttachmentSource = (*Host)(nil)
	_ core.HistoryWindower  = (*Host)(nil)
)

// New returns a Host talking to the DSH web server at cfg.BaseURL.
func New(cfg Config) *Host {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 500 * time.Millisecond
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base != "" && !strings.HasSuffix(base, "/api") {
		base += "/api"
	}
	cfg.BaseURL = base
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	h := &Host{cfg: cfg, rpc: newClient(base, hc, cfg.Headers)}
	h.forks.ctx, h.forks.stop = context.WithCancel(context.Background())
	return h
}

// Harness returns "dsh".
func (h *Host) Harness() string { return harnessName }

// sessionRow is one item of session.list.
type sessionRow struct {
	SessionID   string `json:"sessionId"`
	UpdatedAt   int64  `json:"updatedAt"`
	Running     bool   `json:"running"`
	Blank       bool   `json:"blank"`
	Cwd         string `json:"cwd"`
	AgentPreset string `json:"agentPreset"`
	Projections struct {
		Values struct {
			Title string `json:"title"`
		} `json:"values"`
	} `json:"projections"`
}

// ListSessions (session.list) lists DSH's sessions, those of cwd only when
// cwd is set, following nextCursor.
func (h *Host) ListSessions(ctx context.Context, cwd string) ([]core.HostSession, error) {
	var out []core.HostSession
	cursor := ""
	for page := 0; page < 1000; page++ {
		payload := listArgs{Cursor: cursor}
		var res struct {
			Items      []sessionRow `json:"items"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := h.rpc.call(ctx, "session.list", payload, &res); err != nil {
			return nil, err
		}
		for _, r := range res.Items {
			if cwd != "" && r.Cwd != cwd {
				continue
			}
			hs := core.HostSession{NativeID: r.SessionID, Title: r.Projections.Values.Title, Cwd: r.Cwd}
			if r.UpdatedAt > 0 {
				hs.UpdatedAt = time.UnixMilli(r.UpdatedAt).UTC()
			}
			out = append(out, hs)
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			break
		}
		cursor = res.NextCursor
	}
	return out, nil
}

// Models lists the models of DSH's catalog (llm.models; session.models of
// the first listed session on a server without llm.models) as
// "<provider>/<model>" ids.
func (h *Host) Models(ctx context.Context) ([]core.Model, error) {
	cat, err := h.catalog(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []core.Model
	for _, g := range cat.Groups {
		for _, m := range g.Models {
			cm := core.Model{ID: g.ID + "/" + m.ID, Name: m.Name}
			for _, e := range m.Reasoning.Efforts {
				cm.Efforts = append(cm.Efforts, e.ID)
			}
			for _, in := range m.Input {
				if in == "image" {
					cm.Vision = true
				}
			}
			out = append(out, cm)
		}
	}
	return out, nil
}

// modelCatalog is session.models' value.
type modelCatalog struct {
	Current struct {
		Provider        string `json:"provider"`
		Model           string `json:"model"`
		ReasoningEffort string `json:"reasoningEffort"`
	} `json:"current"`
	Groups []struct {
		ID     string `json:"id"`
		Models []struct {
			ID        string   `json:"id"`
			Name      string   `json:"name"`
			Input     []string `json:"input"`
			Reasoning struct {
				Efforts []struct {
					ID string `json:"id"`
				} `json:"efforts"`
			} `json:"reasoning"`
		} `json:"models"`
	} `json:"groups"`
}

func (h *Host) catalog(ctx context.Context, sessionID string) (modelCatalog, error) {
	var cat modelCatalog
	if sessionID != "" {
		err := h.rpc.call(ctx, "session.models", sessionArgs{SessionID: sessionID}, &cat)
		return cat, err
	}
	// With no session: llm.models (the server's catalog), else the
	// catalog of the first listed session.
	err := h.rpc.call(ctx, "llm.models", struct{}{}, &cat)
	if err == nil || core.ErrorCode(err) == core.CodeUnavailable || core.ErrorCode(err) == core.CodeCancelled {
		return cat, err
	}
	rows, lerr := h.ListSessions(ctx, "")
	if lerr != nil || len(rows) == 0 {
		return cat, err
	}
	cat = modelCatalog{}
	err = h.rpc.call(ctx, "session.models", sessionArgs{SessionID: rows[0].NativeID}, &cat)
	return cat, err
}

// Workspaces (workspace.list) lists DSH's workspaces.
func (h *Host) Workspaces(ctx context.Context) ([]core.Workspace, error) {
	var res struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := h.rpc.call(ctx, "workspace.list", nil, &res); err != nil {
		return nil, err
	}
	str := func(m map[string]json.RawMessage, keys ...string) string {
		for _, k := range keys {
			var s string
			if json.Unmarshal(m[k], &s) == nil && s != "" {
				return s
			}
		}
		return ""
	}
	var out []core.Workspace
	for _, it := range res.Items {
		id := str(it, "workspaceId", "id")
		w := core.Workspace{Path: str(it, "path", "cwd", "root", "directory"), Name: str(it, "name", "title")}
		if w.Path == "" {
			w.Path = id
		}
		if w.Name == "" {
			w.Name = id
		}
		out = append(out, w)
	}
	return out, nil
}

// ArchiveSession (workspace.archiveSession) archives a DSH session.
func (h *Host) ArchiveSession(ctx context.Context, nativeID string) error {
	return h.rpc.call(ctx, "workspace.archiveSession", sessionArgs{SessionID: nativeID}, nil)
}

// presetRow is one item of agentPreset.list.
type presetRow struct {
	ID          string `json:"id"`
	Trust       string `json:"trust"`
	IsDefault   bool   `json:"isDefault"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Broken      any    `json:"broken"`
}

// Presets (agentPreset.list) lists DSH's agent presets (broken ones left
// out) and the configured DSH presets.
func (h *Host) Presets(ctx context.Context) ([]core.Preset, error) {
	var res struct {
		Presets []presetRow `json:"presets"`
	}
	if err := h.rpc.call(ctx, "agentPreset.list", nil, &res); err != nil {
		return nil, err
	}
	var out []core.Preset
	for _, p := range res.Presets {
		if p.Broken != nil && p.Broken != false {
			continue
		}
		desc := strings.TrimSpace(strings.Join([]string{p.Name, p.Description}, ": "))
		desc = strings.Trim(desc, ": ")
		out = append(out, core.Preset{Name: p.ID, Harness: harnessName, Agent: p.ID, Description: desc})
	}
	return append(out, core.PresetsFor(h.cfg.Presets, harnessName)...), nil
}

// History (session.history) reads the whole stored history of a DSH
// session, page by page, mapped to entries.
func (h *Host) History(ctx context.Context, nativeID string) ([]core.NewEntry, error) {
	events, _, err := h.readSince(ctx, nativeID, -1)
	if err != nil {
		return nil, err
	}
	var out []core.NewEntry
	m := newMapper(nativeID, func(e core.NewEntry) { out = append(out, e) })
	for _, ev := range events {
		m.feed(ev)
	}
	return out, nil
}

// HistoryWindow (session.historyWindow, served by DSH after rc.8) reads
// the newest maxMessages messages of a session in one call, mapped to
// entries; moreBefore is DSH's hasMore. A server without the route answers
// with an error wrapping core.ErrUnsupported.
func (h *Host) HistoryWindow(ctx context.Context, nativeID string, maxMessages int) ([]core.NewEntry, bool, error) {
	var hv historyValue
	if err := h.rpc.call(ctx, "session.historyWindow", historyArgs{SessionID: nativeID, MaxMessages: maxMessages}, &hv); err != nil {
		return nil, false, err
	}
	var out []core.NewEntry
	m := newMapper(nativeID, func(e core.NewEntry) { out = append(out, e) })
	for _, e := range hv.Events {
		m.feed(e.Event)
	}
	return out, hv.HasMore, nil
}

// Attachment (session.attachment) recovers an image DSH stored for a
// session.
func (h *Host) Attachment(ctx context.Context, nativeID, ref string) (core.Content, error) {
	var res struct {
		Attachment struct {
			MediaType string `json:"mediaType"`
		} `json:"attachment"`
		Data string `json:"data"`
	}
	if err := h.rpc.call(ctx, "session.attachment", attachmentArgs{SessionID: nativeID, AttachmentID: ref}, &res); err != nil {
		return core.Content{}, err
	}
	if res.Data == "" {
		return core.Content{}, core.Errorf(core.CodeNotFound, "dsh session.attachment: attachment %q of %s has no data", ref, nativeID)
	}
	return core.Content{Type: "image", MediaType: res.Attachment.MediaType, Data: res.Data}, nil
}
