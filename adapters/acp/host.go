// Package acp drives agents that speak the Agent Client Protocol (ACP, v1,
// plus the unstable session compaction updates) over their stdio: one agent
// process per live session, newline-delimited JSON-RPC 2.0 with requests
// flowing both ways. It implements core.BridgeHost and core.NativeResumer.
//
// What the adapter learns from the agent is remembered by the Host and
// reported by Probe: the initialize result (agentInfo, loadSession,
// sessionCapabilities), and from the sessions it ran whether the agent
// advertised a compact command (compaction.command, and compaction.focus
// when that command takes input), offered models (session.models,
// session.selectModel) and reported usage_update (context.gauge). Before a
// session has shown them, those capabilities are reported unavailable with a
// detail saying they are not known yet.
package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Config configures an ACP host.
type Config struct {
	// Name is the harness name reported (default "acp").
	Name string
	// Command is the agent program, e.g. node_modules/.bin/claude-code-acp;
	// a bare name is looked up on PATH.
	Command string
	// Args are the program's arguments.
	Args []string
	// Env is appended to os.Environ() for the agent process.
	Env []string
	// Presets are the presets offered for this harness. ApprovalPolicy
	// "approve" answers session/request_permission with an allow option;
	// anything else rejects.
	Presets []core.Preset
	// Cwd is the working directory used when a request names none.
	Cwd string
	// ProbeTimeout bounds the one initialize Probe runs when it knows
	// nothing about the agent yet (default 60s: a Node agent's start took
	// over 20 s on a loaded two-core machine, and a probe that gives up
	// reports every capability unavailable).
	ProbeTimeout time.Duration
}

// Host is the ACP adapter. It is safe for concurrent use.
type Host struct {
	cfg Config

	mu         sync.Mutex
	init       *initializeResult
	initErr    string
	initErrAt  time.Time
	sawCompact bool
	// reportsCompaction: the agent advertised
	// sessionCapabilities.compaction or a session of it has sent a
	// compaction_update — what makes a compaction observable to Bridge.
	reportsCompaction bool
	compactInput      bool
	compactHint       string
	sawGauge          bool
	models            []core.Model
	canSelect         bool
}

// New returns an ACP host for cfg.
func New(cfg Config) *Host {
	if cfg.Name == "" {
		cfg.Name = "acp"
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 60 * time.Second
	}
	return &Host{cfg: cfg}
}

var (
	_ core.BridgeHost    = (*Host)(nil)
	_ core.NativeResumer = (*Host)(nil)
)

// Harness returns the configured harness name.
func (h *Host) Harness() string { return h.cfg.Name }

func (h *Host) learnInit(r initializeResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init = &r
	h.initErr = ""
}

// learnSession records what a session showed about the agent.
func (h *Host) learnSession(m *mapper, setup *sessionSetup) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m != nil {
		if c, ok := m.compactCommand(); ok {
			h.sawCompact = true
			h.compactHint, h.compactInput = c.hint()
		} else if m.haveCommands {
			h.sawCompact, h.compactInput, h.compactHint = false, false, ""
		}
		if m.sawGauge {
			h.sawGauge = true
		}
		if m.sawCompaction {
			h.reportsCompaction = true
		}
	}
	if setup != nil {
		if models, ok := setupModels(setup); ok {
			h.models, h.canSelect = models, true
		}
	}
}

// setupModels lists the models a session setup offers, from the model
// config option or the unstable models state.
func setupModels(s *sessionSetup) ([]core.Model, bool) {
	if opt := modelOption(s); opt != nil {
		var choices []struct {
			Value string `json:"value"`
			Name  string `json:"name"`
		}
		_ = json.Unmarshal(opt.Options, &choices)
		var out []core.Model
		for _, c := range choices {
			if c.Value != "" {
				out = append(out, core.Model{ID: c.Value, Name: c.Name})
			}
		}
		return out, true
	}
	if s.Models != nil && len(s.Models.AvailableModels) > 0 {
		var out []core.Model
		for _, m := range s.Models.AvailableModels {
			out = append(out, core.Model{ID: m.ModelID, Name: m.Name})
		}
		return out, true
	}
	return nil, false
}

func modelOption(s *sessionSetup) *configOption {
	for i := range s.ConfigOptions {
		if s.ConfigOptions[i].Category == "model" {
			return &s.ConfigOptions[i]
		}
	}
	return nil
}

// knowledge is a copy of what the host has learned.
type knowledge struct {
	init                  *initializeResult
	initErr               string
	sawCompact, compactIn bool
	reportsCompaction     bool
	compactHint           string
	sawGauge, canSelect   bool
	models                []core.Model
}

func (h *Host) known() knowledge {
	h.mu.Lock()
	defer h.mu.Unlock()
	return knowledge{init: h.init, initErr: h.initErr, sawCompact: h.sawCompact, compactIn: h.compactInput,
		compactHint: h.compactHint, reportsCompaction: h.compactionReported(), sawGauge: h.sawGauge, canSelect: h.canSelect,
		models: append([]core.Model(nil), h.models...)}
}

// compactionReported says whether Bridge can observe this agent's
// compactions: the agent advertises sessionCapabilities.compaction, or one
// of its sessions has sent a compaction_update. The caller holds h.mu.
func (h *Host) compactionReported() bool {
	return h.reportsCompaction || (h.init != nil && present(h.init.AgentCapabilities.SessionCapabilities.Compaction))
}

// canCompact says whether Compact may send the agent's compact command.
func (h *Host) canCompact() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.compactionReported()
}

// ensureInit runs initialize once in a throwaway process when nothing is
// known yet (Probe and host-level calls). It mutates nothing on the agent's
// side: initialize only. A failure is remembered for 30 seconds.
func (h *Host) ensureInit(ctx context.Context) (*initializeResult, error) {
	h.mu.Lock()
	if h.init != nil {
		r := h.init
		h.mu.Unlock()
		return r, nil
	}
	if h.initErr != "" && time.Since(h.initErrAt) < 30*time.Second {
		msg := h.initErr
		h.mu.Unlock()
		return nil, core.Errorf(core.CodeUnavailable, "%s", msg)
	}
	h.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, h.cfg.ProbeTimeout)
	defer cancel()
	a, err := h.spawn(pctx, h.probeDir(), discard{}, false)
	if err != nil {
		if ctx.Err() == nil {
			h.mu.Lock()
			h.initErr, h.initErrAt = err.Error(), time.Now()
			h.mu.Unlock()
		}
		return nil, err
	}
	a.stop(context.Background())
	return &a.init, nil
}

func (h *Host) probeDir() string {
	if h.cfg.Cwd != "" {
		return h.cfg.Cwd
	}
	return ""
}

// discard is the handler of a throwaway process: it refuses every request
// and ignores the rest.
type discard struct{}

func (discard) notify(string, json.RawMessage) {}
func (discard) request(method string, _ json.RawMessage) (any, *rpcError) {
	return nil, &rpcError{Code: -32601, Message: "method not found: " + method}
}
func (discard) malformed([]byte, error) {}

// Probe reports the agent program, its version (agentInfo from initialize)
// and capabilities. When nothing is known yet it starts the agent once and
// calls initialize only, bounded by ProbeTimeout; with a cancelled context
// it reports what the configuration and earlier sessions say.
func (h *Host) Probe(ctx context.Context) (p core.Probe) {
	p = core.Probe{Harness: h.cfg.Name}
	defer func() {
		if r := recover(); r != nil {
			p.Capabilities = capabilities(knowledge{}, fmt.Sprintf("probe failed: %v", r), false)
		}
	}()
	prog, err := h.resolveProgram()
	if err != nil {
		p.Capabilities = capabilities(knowledge{}, err.Error(), false)
		return p
	}
	p.Binary = prog
	if ctx.Err() == nil {
		_, _ = h.ensureInit(ctx)
	}
	k := h.known()
	if k.init != nil && k.init.AgentInfo != nil {
		p.Version = k.init.AgentInfo.Version
	}
	why := ""
	if k.init == nil {
		why = "the agent has not answered initialize yet"
		if k.initErr != "" {
			why = "initialize failed: " + k.initErr
		}
	}
	// An agent that fails initialize can do nothing at all.
	p.Capabilities = capabilities(k, why, k.initErr == "")
	return p
}

// capabilities builds the report. found says whether the program exists;
// why explains capabilities that depend on an initialize result not had.
func capabilities(k knowledge, why string, found bool) []core.Capability {
	var out []core.Capability
	add := func(name string, ok bool, detail string) {
		out = append(out, core.Capability{Name: name, Available: ok, Detail: detail})
	}
	if !found {
		for _, n := range core.Capabilities {
			add(n, false, why)
		}
		return out
	}
	ini := k.init
	initDetail := func(ok bool, yes, no string) (bool, string) {
		if ini == nil {
			return false, why
		}
		if ok {
			return true, yes
		}
		return false, no
	}
	ok, d := initDetail(ini != nil && present(ini.AgentCapabilities.SessionCapabilities.List),
		"session/list", "the agent does not advertise sessionCapabilities.list")
	add(core.CapSessionList, ok, d)
	add(core.CapSessionCreate, true, "session/new, one agent process per live session")
	ok, d = initDetail(ini != nil && ini.AgentCapabilities.LoadSession,
		"session/load replay in a temporary agent process", "the agent does not advertise loadSession")
	add(core.CapSessionHistory, ok, d)
	if k.canSelect {
		add(core.CapSessionModels, len(k.models) > 0, "models offered by the agent's last session")
		add(core.CapSessionSelect, true, "session/set_config_option (model) or session/set_model")
	} else {
		add(core.CapSessionModels, false, "no session of this agent has offered models yet")
		add(core.CapSessionSelect, false, "no session of this agent has offered model selection yet")
	}
	add(core.CapSessionPrompt, true, "session/prompt")
	add(core.CapSessionCancel, true, "session/cancel")
	add(core.CapSessionRename, false, "ACP has no client-side session rename")
	add(core.CapWorkspaceList, false, "ACP has no workspace list")
	add(core.CapWorkspaceArchive, false, "ACP has no session archive")
	add(core.CapPresetList, true, "presets from Bridge's configuration")
	add(core.CapGoalCreate, false, "ACP has no goals")
	add(core.CapGoalPause, false, "ACP has no goals")
	add(core.CapAttachment, false, "ACP has no attachment recovery")
	add(core.CapGoalClear, false, "ACP has no goals")
	add(core.CapHistoryWindow, false, "session/load replays the whole history")
	add(core.CapPromptSteer, false, "ACP has no prompt into a running turn (a second session/prompt waits in Bridge's queue)")
	switch {
	case ini == nil:
		add(core.CapNativeResume, false, why)
	case ini.AgentCapabilities.LoadSession:
		add(core.CapNativeResume, true, "session/load")
	case present(ini.AgentCapabilities.SessionCapabilities.Resume):
		add(core.CapNativeResume, true, "session/resume")
	default:
		add(core.CapNativeResume, false, "the agent advertises neither loadSession nor sessionCapabilities.resume")
	}
	if k.sawCompact && !k.reportsCompaction {
		add(core.CapCompactCommand, false, "the agent lists a compact command but reports no compaction over ACP "+
			"(no sessionCapabilities.compaction, no compaction_update seen): Bridge could not record it")
		add(core.CapCompactionFocus, false, "no observable compaction")
	} else if k.sawCompact {
		add(core.CapCompactCommand, true, "the agent's compact command, sent as a /compact prompt")
		if k.compactIn {
			add(core.CapCompactionFocus, true, "passed as the compact command's input ("+k.compactHint+")")
		} else {
			add(core.CapCompactionFocus, false, "the agent's compact command takes no input")
		}
	} else {
		add(core.CapCompactCommand, false, "no session of this agent has advertised a compact command")
		add(core.CapCompactionFocus, false, "no compact command advertised")
	}
	add(core.CapApprovalRelay, true, "session/request_permission, with the agent's own options")
	ok, d = initDetail(ini != nil && present(ini.AgentCapabilities.SessionCapabilities.Fork),
		"session/fork in a second agent process (nice 10), which is stopped afterwards",
		"the agent does not advertise sessionCapabilities.fork")
	add(core.CapSessionFork, ok, d)
	if k.sawGauge {
		add(core.CapContextGauge, true, "usage_update")
	} else {
		add(core.CapContextGauge, false, "no session of this agent has sent usage_update yet")
	}
	return out
}

func unsupported(what string) error {
	return core.E(core.CodeUnsupported, "acp: "+what, core.ErrUnsupported)
}

// ListSessions lists the agent's sessions through session/list, in a
// temporary agent process, when the agent advertises it.
func (h *Host) ListSessions(ctx context.Context, cwd string) ([]core.HostSession, error) {
	ini, err := h.ensureInit(ctx)
	if err != nil {
		return nil, err
	}
	if !present(ini.AgentCapabilities.SessionCapabilities.List) {
		return nil, unsupported("the agent does not advertise session/list")
	}
	a, err := h.spawn(ctx, cwd, discard{}, false)
	if err != nil {
		return nil, err
	}
	defer a.stop(context.Background())
	var out []core.HostSession
	cursor := ""
	for page := 0; page < 50; page++ {
		params := listSessionsParams{Cursor: cursor}
		if cwd != "" {
			if abs, err := filepath.Abs(cwd); err == nil {
				params.Cwd = abs
			}
		}
		raw, err := a.call(ctx, "session/list", params)
		if err != nil {
			return nil, err
		}
		var res listSessionsResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, core.E(core.CodeHarness, "acp: session/list result", err)
		}
		for _, s := range res.Sessions {
			hs := core.HostSession{NativeID: s.SessionID, Title: s.Title, Cwd: s.Cwd}
			if t, err := time.Parse(time.RFC3339, s.UpdatedAt); err == nil {
				hs.UpdatedAt = t
			}
			out = append(out, hs)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return out, nil
}

// History replays a session with session/load in a temporary agent process
// and maps the replay to entries (user and assistant messages, tools).
func (h *Host) History(ctx context.Context, nativeID string) ([]core.NewEntry, error) {
	ini, err := h.ensureInit(ctx)
	if err != nil {
		return nil, err
	}
	if !ini.AgentCapabilities.LoadSession {
		return nil, unsupported("the agent does not advertise loadSession (history replay)")
	}
	col := &collector{m: newMapper(h.cfg.Name, nativeID, "history-"+nativeID, modeHistory)}
	cwd := h.cfg.Cwd
	a, err := h.spawn(ctx, cwd, col, false)
	if err != nil {
		return nil, err
	}
	defer a.stop(context.Background())
	if present(ini.AgentCapabilities.SessionCapabilities.List) {
		// Agents may key stored sessions by working directory: load the
		// session where the agent says it lives.
		if dir := a.sessionCwd(ctx, nativeID); dir != "" {
			cwd = dir
		}
	}
	if _, err := a.call(ctx, "session/load", loadSessionParams{SessionID: nativeID, Cwd: absDir(cwd), McpServers: []any{}}); err != nil {
		return nil, core.E(core.CodeNotFound, fmt.Sprintf("acp: session %q could not be loaded", nativeID), err)
	}
	return col.finish(), nil
}

// sessionCwd asks session/list (all directories) where nativeID lives.
func (a *agent) sessionCwd(ctx context.Context, nativeID string) string {
	cursor := ""
	for page := 0; page < 50; page++ {
		raw, err := a.call(ctx, "session/list", listSessionsParams{Cursor: cursor})
		if err != nil {
			return ""
		}
		var res listSessionsResult
		if json.Unmarshal(raw, &res) != nil {
			return ""
		}
		for _, s := range res.Sessions {
			if s.SessionID == nativeID {
				return s.Cwd
			}
		}
		if res.NextCursor == "" {
			return ""
		}
		cursor = res.NextCursor
	}
	return ""
}

// collector gathers a replay's entries.
type collector struct {
	mu      sync.Mutex
	m       *mapper
	entries []core.NewEntry
}

func (c *collector) add(evs []core.Event) {
	for _, ev := range evs {
		if ev.Entry != nil {
			c.entries = append(c.entries, *ev.Entry)
		}
	}
}

func (c *collector) notify(method string, params json.RawMessage) {
	if method != "session/update" {
		return
	}
	var n sessionNotification
	if json.Unmarshal(params, &n) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(c.m.update(n.Update))
}

func (c *collector) request(method string, _ json.RawMessage) (any, *rpcError) {
	if method == "session/request_permission" {
		return cancelledOutcome, nil
	}
	return nil, &rpcError{Code: -32601, Message: "method not found: " + method}
}

func (c *collector) malformed([]byte, error) {}

func (c *collector) finish() []core.NewEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(c.m.endTurn())
	return c.entries
}

// Models lists the models the agent's last session offered.
func (h *Host) Models(ctx context.Context) ([]core.Model, error) {
	k := h.known()
	if !k.canSelect {
		return nil, unsupported("no session of this agent has offered models yet")
	}
	return k.models, nil
}

// Workspaces is not part of ACP.
func (h *Host) Workspaces(ctx context.Context) ([]core.Workspace, error) {
	return nil, unsupported("ACP has no workspace list")
}

// ArchiveSession is not part of ACP.
func (h *Host) ArchiveSession(ctx context.Context, nativeID string) error {
	return unsupported("ACP has no session archive")
}

// Presets returns the configured presets for this harness.
func (h *Host) Presets(ctx context.Context) ([]core.Preset, error) {
	return append([]core.Preset{}, core.PresetsFor(h.cfg.Presets, h.cfg.Name)...), nil
}

// absDir returns dir as an absolute path (ACP requires one), or the current
// directory for "".
func absDir(dir string) string {
	if dir == "" {
		dir = "."
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// newNonce returns a random hex string that keeps native ids unique across
// agent processes.
func newNonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
