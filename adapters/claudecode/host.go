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
	"regexp"
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

// probeCommandTimeout bounds `claude --version` and `claude --help`. Each
// answers in about a second, but a two-core machine loaded by other work
// (CI running test packages side by side) stretched one past 5 s, and the
// probe then reported capabilities the program has as unavailable.
const probeCommandTimeout = 30 * time.Second

// Probe reports the binary, its version and the capabilities.
func (h *Host) Probe(ctx context.Context) core.Probe {
	p := core.Probe{Harness: Harness}
	var f probeFacts
	bin, err := h.binary()
	if err != nil {
		f.procDetail = err.Error()
	} else {
		p.Binary = bin
		p.Version, f.procDetail = h.version(ctx, bin)
	}
	f.version = p.Version
	// What the installed CLI offers is asked of it, not assumed from its
	// version: the flags its --help lists, and the slash commands its
	// initialize response lists.
	if f.procDetail == "" {
		f.d = h.discover(ctx, bin)
	}
	caps := h.capabilities(f)
	if c := caps[core.CapSessionCreate]; len(h.cfg.Env) > 0 {
		c.Detail += envNote(h.cfg.Env)
		caps[core.CapSessionCreate] = c
	}
	for _, n := range core.Capabilities {
		p.Capabilities = append(p.Capabilities, caps[n])
	}
	return p
}

// version runs `claude --version` as the sessions will run it; on failure
// it returns why instead.
func (h *Host) version(ctx context.Context, bin string) (version, failed string) {
	vctx, cancel := context.WithTimeout(ctx, probeCommandTimeout)
	defer cancel()
	vcmd := exec.CommandContext(vctx, bin, "--version")
	vcmd.Env = h.environ()
	out, err := vcmd.Output()
	if err != nil {
		return "", fmt.Sprintf("claude-code: `%s --version` failed: %v", bin, err)
	}
	return strings.TrimSpace(string(out)), ""
}

// probeFacts is what the probe learnt of the installed CLI: its version,
// why it cannot be run ("" when it can), and what it lists.
type probeFacts struct {
	version    string
	procDetail string
	d          discovery
}

// proc is a capability the CLI has whenever it runs.
func (f probeFacts) proc(name, detail string) core.Capability {
	if f.procDetail != "" {
		return core.Capability{Name: name, Available: false, Detail: f.procDetail}
	}
	return core.Capability{Name: name, Available: true, Detail: detail}
}

// flag is a capability that needs the flags `claude --help` lists.
func (f probeFacts) flag(name, detail string, flags ...string) core.Capability {
	c := f.proc(name, detail)
	if !c.Available {
		return c
	}
	if f.d.helpErr != "" {
		return core.Capability{Name: name, Detail: f.d.helpErr}
	}
	for _, fl := range flags {
		if !f.d.flags[fl] {
			return core.Capability{Name: name, Detail: fmt.Sprintf("`claude --help` of %s lists no %s", f.version, fl)}
		}
	}
	return c
}

// control is a capability of the control protocol (the initialize
// response must have come).
func (f probeFacts) control(name, detail string) core.Capability {
	c := f.proc(name, detail)
	if c.Available && f.d.initErr != "" {
		return core.Capability{Name: name, Detail: f.d.initErr}
	}
	return c
}

// command is a capability of a slash command the initialize response
// lists; wantInput asks for one that takes an argument.
func (f probeFacts) command(name, cmd string, wantInput bool) core.Capability {
	c := f.control(name, "")
	if !c.Available {
		return c
	}
	hint, ok := f.d.commands[cmd]
	switch {
	case !ok:
		return core.Capability{Name: name, Detail: fmt.Sprintf("the initialize response of %s lists no /%s", f.version, cmd)}
	case wantInput && hint == "":
		return core.Capability{Name: name, Detail: fmt.Sprintf("/%s of %s takes no input (no argument hint)", cmd, f.version)}
	case wantInput:
		return core.Capability{Name: name, Available: true, Detail: fmt.Sprintf("/%s %s", cmd, hint)}
	}
	return core.Capability{Name: name, Available: true, Detail: "/" + cmd + " (listed by the initialize response)"}
}

// lacks is a capability Claude Code does not have, and why.
func lacks(name, why string) core.Capability { return core.Capability{Name: name, Detail: why} }

// capabilities says, for every capability, whether the CLI the facts
// describe has it.
func (h *Host) capabilities(f probeFacts) map[string]core.Capability {
	projects := filepath.Join(h.configDir(), "projects")
	return map[string]core.Capability{
		core.CapSessionList:      {Name: core.CapSessionList, Available: true, Detail: "transcripts under " + projects},
		core.CapSessionCreate:    f.flag(core.CapSessionCreate, "claude -p --input-format stream-json", "--print", "--input-format", "--output-format", "--session-id"),
		core.CapSessionHistory:   {Name: core.CapSessionHistory, Available: true, Detail: "transcripts under " + projects},
		core.CapSessionModels:    f.control(core.CapSessionModels, "from the initialize control response"),
		core.CapSessionSelect:    f.control(core.CapSessionSelect, "set_model control request"),
		core.CapSessionPrompt:    f.flag(core.CapSessionPrompt, "", "--input-format"),
		core.CapSessionCancel:    f.control(core.CapSessionCancel, "interrupt control request"),
		core.CapSessionRename:    f.control(core.CapSessionRename, "rename_session control request (stored as the transcript's custom title)"),
		core.CapWorkspaceList:    {Name: core.CapWorkspaceList, Available: true, Detail: "project folders under " + projects},
		core.CapWorkspaceArchive: lacks(core.CapWorkspaceArchive, "Claude Code has no archive operation"),
		core.CapPresetList:       {Name: core.CapPresetList, Available: true, Detail: "presets from Bridge's configuration"},
		core.CapGoalCreate:       lacks(core.CapGoalCreate, "Claude Code has no goals"),
		core.CapGoalPause:        lacks(core.CapGoalPause, "Claude Code has no goals"),
		core.CapAttachment:       lacks(core.CapAttachment, "not implemented for Claude Code"),
		core.CapGoalClear:        lacks(core.CapGoalClear, "Claude Code has no goals"),
		core.CapHistoryWindow:    lacks(core.CapHistoryWindow, "Claude Code has no history window"),
		core.CapNativeResume:     f.flag(core.CapNativeResume, "--resume <id>, proven by the CLI's own session id", "--resume"),
		core.CapSessionFork:      f.flag(core.CapSessionFork, "a side process: --resume <id> --fork-session --no-session-persistence, with the session's own options", "--resume", "--fork-session", "--no-session-persistence"),
		core.CapCompactCommand:   f.command(core.CapCompactCommand, "compact", false),
		core.CapCompactionFocus:  f.command(core.CapCompactionFocus, "compact", true),
		core.CapContextGauge:     lacks(core.CapContextGauge, "Claude Code compacts its own window; Bridge does not gauge it"),
		core.CapPromptSteer:      f.flag(core.CapPromptSteer, "a user line written on stream-json input while the turn runs", "--input-format", "--replay-user-messages"),
		core.CapApprovalRelay:    f.flag(core.CapApprovalRelay, "can_use_tool control requests (--permission-prompt-tool stdio) for tools the preset does not allow", "--permission-prompt-tool"),
	}
}

// envNote names the configured environment variables (never their values).
func envNote(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return "; configured environment: " + procutil.EnvNames(env)
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

// discovery is what the installed CLI says it offers: the flags its
// --help lists and the slash commands (name → argument hint) its
// initialize response lists. helpErr and initErr say why either is unknown.
type discovery struct {
	flags    map[string]bool
	commands map[string]string
	helpErr  string
	initErr  string
}

// helpFlag matches a flag at the start of a --help option line
// ("  -r, --resume [value]   …", "  --fork-session   …").
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[A-Za-z], )?(--[a-z][a-z0-9-]*)`)

// discover asks the installed CLI what it offers: `claude --help` for its
// flags and a short-lived process's initialize response (no turn is run)
// for its slash commands.
func (h *Host) discover(ctx context.Context, bin string) discovery {
	d := discovery{flags: map[string]bool{}, commands: map[string]string{}}
	hctx, cancel := context.WithTimeout(ctx, probeCommandTimeout)
	cmd := exec.CommandContext(hctx, bin, "--help")
	cmd.Env = h.environ()
	out, err := cmd.Output()
	cancel()
	if err != nil {
		d.helpErr = fmt.Sprintf("claude-code: `%s --help` failed: %v", bin, err)
	}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		d.flags[m[1]] = true
	}
	resp, err := h.initResponse(ctx, bin)
	if err != nil {
		d.initErr = "claude-code: the initialize control request failed: " + err.Error()
		return d
	}
	var init struct {
		Commands []struct {
			Name         string `json:"name"`
			ArgumentHint string `json:"argumentHint"`
		} `json:"commands"`
	}
	if err := json.Unmarshal(resp, &init); err != nil {
		d.initErr = "claude-code: unreadable initialize response: " + err.Error()
		return d
	}
	for _, c := range init.Commands {
		d.commands[strings.TrimPrefix(c.Name, "/")] = strings.TrimSpace(c.ArgumentHint)
	}
	return d
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
