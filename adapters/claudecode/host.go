// Package claudecode drives the Claude Code CLI (`claude`) as a Bridge
// harness: one long-lived `claude -p --input-format stream-json
// --output-format stream-json --verbose` process per session, its
// stream-json output mapped to record entries, native resume proven
// against the CLI's own report, and transcript import.
package claudecode

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// startTimeout bounds how long a new process may take to answer the
// initialize control request.
const startTimeout = 60 * time.Second

// Config configures the adapter.
type Config struct {
	// Command is the program to run (default "claude", found on PATH).
	Command string
	// Args are extra arguments appended to every invocation.
	Args []string
	// Env is extra environment ("K=V") appended to os.Environ().
	Env []string
	// Presets are the presets offered for this harness.
	Presets []core.Preset
	// ConfigDir, when set, becomes CLAUDE_CONFIG_DIR (isolated tests) and is
	// where transcripts are read from.
	ConfigDir string
}

// Host is the Claude Code adapter; it implements core.BridgeHost,
// core.NativeResumer and core.Importer.
type Host struct {
	cfg Config
}

// New returns a Claude Code host.
func New(cfg Config) *Host {
	if cfg.Command == "" {
		cfg.Command = "claude"
	}
	return &Host{cfg: cfg}
}

var (
	_ core.BridgeHost    = (*Host)(nil)
	_ core.NativeResumer = (*Host)(nil)
	_ core.Importer      = (*Host)(nil)
)

// Harness returns "claude-code".
func (h *Host) Harness() string { return Harness }

// binary resolves the configured command.
func (h *Host) binary() (string, error) {
	p, err := exec.LookPath(h.cfg.Command)
	if err != nil {
		return "", core.E(core.CodeUnavailable, fmt.Sprintf("claude-code: program %q not found on PATH (install @anthropic-ai/claude-code or configure the command)", h.cfg.Command), err)
	}
	return p, nil
}

// environ is the process environment for the CLI.
func (h *Host) environ() []string { return h.environFor(core.Preset{}) }

// environFor is the process environment for a session of preset p.
func (h *Host) environFor(p core.Preset) []string {
	// Claude Code leaves its plan tools (TaskCreate, TaskUpdate) out of
	// headless sessions unless asked; Bridge's sessions are interactive and
	// their plan updates mark phase boundaries (unless the preset says
	// planTools: false). The user's environment and Config.Env come later
	// and win.
	var env []string
	if p.WantsPlanTools() {
		env = append(env, "CLAUDE_CODE_ENABLE_TODO_TOOLS=1")
	}
	env = append(env, os.Environ()...)
	env = append(env, h.cfg.Env...)
	if h.cfg.ConfigDir != "" {
		env = append(env, "CLAUDE_CONFIG_DIR="+h.cfg.ConfigDir)
	}
	return env
}

// configDir is where Claude Code keeps its state: Config.ConfigDir, then
// CLAUDE_CONFIG_DIR from Config.Env or the environment, then ~/.claude.
func (h *Host) configDir() string {
	if h.cfg.ConfigDir != "" {
		return h.cfg.ConfigDir
	}
	for i := len(h.cfg.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(h.cfg.Env[i], "CLAUDE_CONFIG_DIR="); ok && v != "" {
			return v
		}
	}
	if v := os.Getenv("CLAUDE_CONFIG_DIR"); v != "" {
		return v
	}
	home := ""
	for i := len(h.cfg.Env) - 1; i >= 0 && home == ""; i-- {
		if v, ok := strings.CutPrefix(h.cfg.Env[i], "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// newUUID returns a random version-4 UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// args builds the command line for a session.
func (h *Host) args(req core.CreateRequest, sessionFlag, id string, extra ...string) []string {
	// --permission-prompt-tool stdio: the CLI asks Bridge (a can_use_tool
	// control request) before running a tool the preset does not allow,
	// unless the preset says approvalRelay: false.
	a := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--replay-user-messages"}
	if req.Preset.Relays() {
		a = append(a, "--permission-prompt-tool", "stdio")
	}
	a = append(a, sessionFlag, id)
	pr := req.Preset
	model := req.Model
	if model == "" {
		model = pr.Model
	}
	if model != "" {
		a = append(a, "--model", model)
	}
	effort := req.Effort
	if effort == "" {
		effort = pr.Effort
	}
	if effort != "" {
		a = append(a, "--effort", effort)
	}
	if pr.PermissionMode != "" {
		a = append(a, "--permission-mode", pr.PermissionMode)
	}
	if len(pr.AllowedTools) > 0 {
		a = append(a, "--allowedTools", strings.Join(pr.AllowedTools, ","))
	}
	if len(pr.DisallowedTools) > 0 {
		a = append(a, "--disallowedTools", strings.Join(pr.DisallowedTools, ","))
	}
	if pr.AppendSystemPrompt != "" {
		a = append(a, "--append-system-prompt", pr.AppendSystemPrompt)
	}
	a = append(a, extra...)
	return append(a, h.cfg.Args...)
}

// start launches a process and waits for its initialize response.
func (h *Host) start(ctx context.Context, req core.CreateRequest, sessionFlag, id string, sink core.EventSink, extra ...string) (*live, error) {
	if err := ctx.Err(); err != nil {
		return nil, core.E(core.CodeCancelled, "claude-code: not started", errors.Join(core.ErrCancelled, err))
	}
	bin, err := h.binary()
	if err != nil {
		return nil, err
	}
	if req.Cwd != "" {
		if st, err := os.Stat(req.Cwd); err != nil || !st.IsDir() {
			return nil, core.E(core.CodeInvalid, fmt.Sprintf("claude-code: working directory %q is not a directory", req.Cwd), err)
		}
	}
	// A fork (a checkpoint's side process) runs at a lower CPU priority, so
	// that its start does not slow the live session's turns.
	l, err := startLive(procutil.Spec{Path: bin, Args: h.args(req, sessionFlag, id, extra...), Dir: req.Cwd, Env: h.environFor(req.Preset),
		Background: slices.Contains(extra, "--fork-session")}, req, sink)
	if err != nil {
		return nil, err
	}
	l.host = h
	ictx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := l.initialize(ictx); err != nil {
		if ictx.Err() != nil {
			l.kill()
		}
		<-l.done
		return l, core.E(core.CodeHarness, "claude-code: the program did not start: "+l.failureText(), err)
	}
	return l, nil
}

// CreateSession starts a new Claude Code session. The session id is chosen
// by Bridge (--session-id) so it is known before the first turn.
func (h *Host) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	id := newUUID()
	l, err := h.start(ctx, req, "--session-id", id, sink)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.nativeID = id
	l.mu.Unlock()
	l.sink(core.Event{NativeSessionID: id})
	return l, nil
}

// Resume starts `claude --resume <id>` and proves the resume without
// starting a turn: the CLI refuses an unknown id at start-up (an error
// result and exit 1), and for a known one the get_status control request
// reports the session it loaded, which must be the requested id. The first
// turn's system/init then carries the same id.
func (h *Host) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	if req.NativeID == "" {
		return nil, core.Errorf(core.CodeInvalid, "claude-code: resume needs a session id")
	}
	l, err := h.start(ctx, req.CreateRequest, "--resume", req.NativeID, sink)
	if err != nil {
		var ce *core.Error
		if l == nil || (errors.As(err, &ce) && ce.Code == core.CodeUnavailable) {
			return nil, err
		}
		return nil, &core.ResumeError{NativeText: l.failureText(), Err: err}
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	resp, err := l.control(sctx, controlRequest{Subtype: "get_status"})
	if err != nil {
		l.Close(ctx)
		return nil, &core.ResumeError{NativeText: l.failureText(), Err: err}
	}
	got := statusRow(resp, "Session ID")
	if got != req.NativeID {
		l.Close(ctx)
		text := fmt.Sprintf("claude-code reports session %q after --resume %q", got, req.NativeID)
		if got == "" {
			text = "claude-code did not report which session it loaded"
		}
		return nil, &core.ResumeError{NativeText: text, Err: core.Errorf(core.CodeHarness, "resume not proven")}
	}
	l.mu.Lock()
	l.nativeID = req.NativeID
	l.mu.Unlock()
	l.sink(core.Event{NativeSessionID: req.NativeID})
	return l, nil
}

// failureText is the harness's own account of a failed start: the errors of
// its result line, else the tail of stderr.
func (l *live) failureText() string {
	l.mu.Lock()
	r := l.lastResult
	l.mu.Unlock()
	if r != nil && len(r.Errors) > 0 {
		return strings.Join(r.Errors, "; ")
	}
	if t := strings.TrimSpace(l.proc.Stderr.String()); t != "" {
		return lastLines(t, 5)
	}
	if r != nil && r.Result != "" {
		return r.Result
	}
	return "claude-code exited without a message"
}

// statusRow finds a row's value in a get_status response.
func statusRow(resp json.RawMessage, label string) string {
	var st struct {
		Sections []struct {
			Rows []struct {
				Label string `json:"label"`
				Value string `json:"value"`
			} `json:"rows"`
		} `json:"sections"`
	}
	if json.Unmarshal(resp, &st) != nil {
		return ""
	}
	for _, s := range st.Sections {
		for _, r := range s.Rows {
			if r.Label == label {
				return r.Value
			}
		}
	}
	return ""
}

// initResponse starts a short-lived process and returns its initialize
// response (no turn is run, nothing is persisted).
func (h *Host) initResponse(ctx context.Context, bin string) (json.RawMessage, error) {
	l, err := startLive(procutil.Spec{Path: bin, Args: append([]string{"-p", "--input-format", "stream-json", "--output-format",
		"stream-json", "--verbose", "--no-session-persistence"}, h.cfg.Args...), Dir: os.TempDir(), Env: h.environ()}, core.CreateRequest{}, nil)
	if err != nil {
		return nil, err
	}
	defer l.Close(context.Background())
	ictx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return l.initialize(ictx)
}

// Models lists the models the CLI offers, read from a short-lived
// process's initialize response (no turn is run).
func (h *Host) Models(ctx context.Context) ([]core.Model, error) {
	bin, err := h.binary()
	if err != nil {
		return nil, err
	}
	resp, err := h.initResponse(ctx, bin)
	if err != nil {
		return nil, err
	}
	var init struct {
		Models []struct {
			Value         string   `json:"value"`
			ResolvedModel string   `json:"resolvedModel"`
			DisplayName   string   `json:"displayName"`
			Efforts       []string `json:"supportedEffortLevels"`
		} `json:"models"`
	}
	if err := json.Unmarshal(resp, &init); err != nil {
		return nil, core.E(core.CodeHarness, "claude-code: unreadable initialize response", err)
	}
	out := make([]core.Model, 0, len(init.Models))
	for _, m := range init.Models {
		out = append(out, core.Model{ID: m.Value, Name: m.DisplayName, Efforts: m.Efforts, Vision: true,
			ContextWindow: h.ContextWindow(m.Value)})
	}
	return out, nil
}

// ContextWindow is Claude Code's window for model: 1,000,000 tokens for a
// model asked for with the "[1m]" suffix, the standard 200,000 for any
// other Claude model or alias, 0 (unknown) for a name Claude Code does not
// know as Claude's.
func (h *Host) ContextWindow(model string) int64 {
	m := strings.ToLower(strings.TrimSpace(model))
	if strings.HasSuffix(m, "[1m]") {
		return 1_000_000
	}
	switch {
	case m == "default", m == "opus", m == "sonnet", m == "haiku", m == "fable", m == "opusplan",
		strings.HasPrefix(m, "claude-"):
		return 200_000
	}
	return 0
}

// ArchiveSession is unsupported: Claude Code has no archive operation.
func (h *Host) ArchiveSession(ctx context.Context, nativeID string) error {
	return core.E(core.CodeUnsupported, "claude-code: Claude Code has no archive operation", core.ErrUnsupported)
}

// Presets lists the configured presets for this harness.
func (h *Host) Presets(ctx context.Context) ([]core.Preset, error) {
	return core.PresetsFor(h.cfg.Presets, Harness), nil
}
