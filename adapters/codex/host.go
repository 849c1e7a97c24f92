// Package codex drives OpenAI Codex through the real `codex app-server`
// program (JSON-RPC without the "jsonrpc" member, one object per line on
// stdio) and implements core.BridgeHost, core.NativeResumer and
// core.Importer.
//
// Process model: every live session (CreateSession, Resume) runs its own
// `codex app-server` process holding exactly one thread; closing the session
// ends the process. Host-level calls that need the server (ListSessions,
// Workspaces, Models, ArchiveSession, History) start a short-lived process
// for the call. Codex keeps threads on disk under CODEX_HOME, so a thread
// started in one process can be resumed in another.
package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Version is the client version sent in initialize.
const Version = "0.1.0"

// Config configures the Codex host.
type Config struct {
	// Command is the program to run (default "codex", looked up on PATH).
	Command string
	// Args are extra arguments after `app-server`, such as
	// `-c model_auto_compact_token_limit=1000`.
	Args []string
	// Env is appended to Bridge's own environment (os.Environ()).
	Env []string
	// Presets are the presets offered for Codex (agentPreset.list). A
	// preset's Profile selects a Codex config profile, Model and Effort the
	// defaults, ApprovalPolicy ("approve" or "deny") how approval requests
	// are answered.
	Presets []core.Preset
	// CodexHome, when set, is passed as CODEX_HOME (isolated tests).
	CodexHome string
	// StateDir, when set, is a folder of the adapter's own (Bridge gives
	// one under its data directory). A checkpoint's side process then
	// keeps its SQLite databases in a folder of its own under it
	// (sqlite_home; removed when the process stops) and runs in the
	// idle scheduling class: it shares no database, and so no lock, with
	// the live session's process. Without it the side process uses
	// CODEX_HOME's databases and runs at nice 10.
	StateDir string
	// SpareIdle is how long a checkpoint's side process is kept, idle, for
	// the session's next fork before it is stopped: 0 means
	// DefaultSpareIdle; a negative value stops it after each fork.
	SpareIdle time.Duration
}

// DefaultSpareIdle is how long an idle side process is kept for the next
// fork when Config.SpareIdle is 0.
const DefaultSpareIdle = 3 * time.Minute

// Host is the Codex adapter.
type Host struct {
	cfg Config

	sweep sync.Once // side folders of dead Bridge processes removed (fork.go)

	mu      sync.Mutex
	methods map[string]map[string]bool // protocol methods per binary+version (Probe)
}

var (
	_ core.BridgeHost    = (*Host)(nil)
	_ core.NativeResumer = (*Host)(nil)
	_ core.Importer      = (*Host)(nil)
)

// New returns a Codex host.
func New(cfg Config) *Host {
	if cfg.Command == "" {
		cfg.Command = "codex"
	}
	return &Host{cfg: cfg}
}

// Harness returns "codex".
func (h *Host) Harness() string { return Harness }

// Presets lists the configured presets usable with Codex.
func (h *Host) Presets(ctx context.Context) ([]core.Preset, error) {
	return core.PresetsFor(h.cfg.Presets, Harness), nil
}

// withProc runs f against a short-lived app-server process.
func (h *Host) withProc(ctx context.Context, f func(p *proc) error) error {
	l := newLive(h, core.Preset{}, nil)
	p, err := h.startProc(ctx, l, launch{})
	if err != nil {
		return err
	}
	l.p = p
	defer p.close(context.WithoutCancel(ctx))
	if err := f(p); err != nil {
		return l.callErr("request", err)
	}
	return nil
}

type wireThread struct {
	ID        string  `json:"id"`
	Name      *string `json:"name"`
	Preview   string  `json:"preview"`
	Cwd       string  `json:"cwd"`
	Model     *string `json:"model"`
	Path      *string `json:"path"`
	UpdatedAt int64   `json:"updatedAt"`
}

// threads pages through thread/list.
func (h *Host) threads(ctx context.Context, cwd string) ([]wireThread, error) {
	var all []wireThread
	err := h.withProc(ctx, func(p *proc) error {
		cursor := ""
		for page := 0; page < 50; page++ {
			params := pageParams{Limit: 100, Cwd: cwd, Cursor: cursor}
			var res struct {
				Data       []wireThread `json:"data"`
				NextCursor *string      `json:"nextCursor"`
			}
			if err := p.conn.call(ctx, "thread/list", params, &res); err != nil {
				return err
			}
			all = append(all, res.Data...)
			if res.NextCursor == nil || *res.NextCursor == "" || len(res.Data) == 0 {
				return nil
			}
			cursor = *res.NextCursor
		}
		return nil
	})
	return all, err
}

// ListSessions lists Codex threads (thread/list), optionally in one cwd.
func (h *Host) ListSessions(ctx context.Context, cwd string) ([]core.HostSession, error) {
	ts, err := h.threads(ctx, cwd)
	if err != nil {
		return nil, err
	}
	out := make([]core.HostSession, 0, len(ts))
	for _, t := range ts {
		s := core.HostSession{NativeID: t.ID, Title: t.Preview, Cwd: t.Cwd}
		if t.Name != nil && *t.Name != "" {
			s.Title = *t.Name
		}
		if t.UpdatedAt > 0 {
			s.UpdatedAt = time.Unix(t.UpdatedAt, 0).UTC()
		}
		out = append(out, s)
	}
	return out, nil
}

// Workspaces lists the working directories of Codex's threads.
func (h *Host) Workspaces(ctx context.Context) ([]core.Workspace, error) {
	ts, err := h.threads(ctx, "")
	if err != nil {
		return nil, err
	}
	cwds := make([]string, len(ts))
	for i, t := range ts {
		cwds[i] = t.Cwd
	}
	return core.WorkspacesOf(cwds), nil
}

// Models lists the models Codex offers (model/list).
func (h *Host) Models(ctx context.Context) ([]core.Model, error) {
	var out []core.Model
	err := h.withProc(ctx, func(p *proc) error {
		cursor := ""
		for page := 0; page < 20; page++ {
			params := pageParams{Cursor: cursor}
			var res struct {
				Data []struct {
					ID                        string   `json:"id"`
					DisplayName               string   `json:"displayName"`
					InputModalities           []string `json:"inputModalities"`
					SupportedReasoningEfforts []struct {
						ReasoningEffort string `json:"reasoningEffort"`
					} `json:"supportedReasoningEfforts"`
				} `json:"data"`
				NextCursor *string `json:"nextCursor"`
			}
			if err := p.conn.call(ctx, "model/list", params, &res); err != nil {
				return err
			}
			for _, m := range res.Data {
				cm := core.Model{ID: m.ID, Name: m.DisplayName}
				for _, e := range m.SupportedReasoningEfforts {
					cm.Efforts = append(cm.Efforts, e.ReasoningEffort)
				}
				for _, mod := range m.InputModalities {
					if mod == "image" {
						cm.Vision = true
					}
				}
				out = append(out, cm)
			}
			if res.NextCursor == nil || *res.NextCursor == "" {
				return nil
			}
			cursor = *res.NextCursor
		}
		return nil
	})
	return out, err
}

// ArchiveSession archives a Codex thread (thread/archive).
func (h *Host) ArchiveSession(ctx context.Context, nativeID string) error {
	return h.withProc(ctx, func(p *proc) error {
		return p.conn.call(ctx, "thread/archive", threadRef{ThreadID: nativeID}, nil)
	})
}

// History reads a thread's rollout file (located with thread/read) and maps
// it like Import does.
func (h *Host) History(ctx context.Context, nativeID string) ([]core.NewEntry, error) {
	var path string
	err := h.withProc(ctx, func(p *proc) error {
		var res struct {
			Thread wireThread `json:"thread"`
		}
		if err := p.conn.call(ctx, "thread/read", threadReadParams{ThreadID: nativeID}, &res); err != nil {
			return err
		}
		if res.Thread.Path != nil {
			path = *res.Thread.Path
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, core.Errorf(core.CodeNotFound, "codex thread %q has no rollout file (ephemeral?)", nativeID)
	}
	s, err := h.Import(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	return s.Entries, nil
}

// sessionArgs are the per-session program arguments: a preset's profile,
// and Codex's plan tool. Codex leaves update_plan out of every request
// unless tools.update_plan.enabled is set (off by default since 0.152);
// Bridge turns it on because its plan updates (turn/plan/updated) mark
// phase boundaries, unless the preset says planTools: false.
func sessionArgs(p core.Preset) []string {
	var args []string
	if p.Profile != "" {
		args = append(args, "-c", fmt.Sprintf("profile=%q", p.Profile))
	}
	if p.WantsPlanTools() {
		args = append(args, "-c", "tools.update_plan.enabled=true")
	}
	return args
}

// open starts a process for one live session; a side process (a
// checkpoint's fork) runs at a lower CPU priority, so that it takes less
// from the live session's turns.
func (h *Host) open(ctx context.Context, req core.CreateRequest, sink core.EventSink, side bool) (*live, error) {
	l := newLive(h, req.Preset, sink)
	l.req = req
	l.model = firstNonEmpty(req.Model, req.Preset.Model)
	l.effort = firstNonEmpty(req.Effort, req.Preset.Effort)
	hh := h
	if extra := sessionArgs(req.Preset); len(extra) > 0 {
		cfg := h.cfg
		cfg.Args = append(append([]string(nil), cfg.Args...), extra...)
		hh = &Host{cfg: cfg}
	}
	how := launch{background: side}
	var dbDir string
	if side && h.cfg.StateDir != "" {
		var err error
		if dbDir, err = h.sideDBDir(); err != nil {
			return nil, err
		}
		// -c outranks config.toml's sqlite_home and CODEX_SQLITE_HOME.
		how.idle, how.args = true, []string{"-c", fmt.Sprintf("sqlite_home=%q", dbDir)}
	}
	p, err := hh.startProc(ctx, l, how)
	if err != nil {
		if dbDir != "" {
			_ = os.RemoveAll(dbDir)
		}
		return nil, err
	}
	if dbDir != "" {
		go func() {
			<-p.done
			_ = os.RemoveAll(dbDir)
		}()
	}
	l.p = p
	return l, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// threadParams are thread/start's (and resume's, fork's) overrides: the
// asking approval policy, so that approvals reach the client, unless the
// preset says approvalRelay: false (then Codex's own configured policy).
func (l *live) threadParams(req core.CreateRequest) threadParams {
	params := threadParams{Cwd: req.Cwd, Model: l.model}
	if req.Preset.Relays() {
		params.ApprovalPolicy = askingPolicy
	}
	return params
}

// CreateSession starts an app-server process and a new thread (thread/start).
func (h *Host) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	l, err := h.open(ctx, req, sink, false)
	if err != nil {
		return nil, err
	}
	var res struct {
		Thread wireThread `json:"thread"`
	}
	if err := l.p.conn.call(ctx, "thread/start", l.threadParams(req), &res); err != nil {
		cerr := l.callErr("thread/start", err)
		_ = l.p.close(context.WithoutCancel(ctx))
		return nil, cerr
	}
	if res.Thread.ID == "" {
		_ = l.p.close(context.WithoutCancel(ctx))
		return nil, core.Errorf(core.CodeHarness, "codex thread/start returned no thread id")
	}
	l.mu.Lock()
	l.threadID = res.Thread.ID
	l.mu.Unlock()
	if req.Title != "" {
		if err := l.Rename(ctx, req.Title); err != nil {
			_ = l.p.close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return l, nil
}

// Resume resumes a stored thread in a new app-server process
// (thread/resume) and proves it: the result must carry the same thread id.
// Otherwise the error is a *core.ResumeError with Codex's own text.
func (h *Host) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	l, err := h.open(ctx, req.CreateRequest, sink, false)
	if err != nil {
		return nil, err
	}
	params := l.threadParams(req.CreateRequest)
	params.ThreadID = req.NativeID
	params.ExcludeTurns = true
	var res struct {
		Thread wireThread `json:"thread"`
	}
	if err := l.p.conn.call(ctx, "thread/resume", params, &res); err != nil {
		_ = l.p.close(context.WithoutCancel(ctx))
		var re *rpcError
		if errors.As(err, &re) {
			return nil, &core.ResumeError{NativeText: re.Message, Err: err}
		}
		return nil, &core.ResumeError{NativeText: err.Error(), Err: l.callErr("thread/resume", err)}
	}
	if res.Thread.ID != req.NativeID {
		_ = l.p.close(context.WithoutCancel(ctx))
		return nil, &core.ResumeError{NativeText: fmt.Sprintf("thread/resume returned thread %q instead of %q", res.Thread.ID, req.NativeID)}
	}
	l.mu.Lock()
	l.threadID = res.Thread.ID
	l.mu.Unlock()
	l.sink(core.Event{NativeSessionID: res.Thread.ID})
	return l, nil
}
