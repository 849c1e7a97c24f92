package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

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
// ("  -r, --resume [value]   …", "  --fork-session   …"), compiled on the
// first probe rather than in every bridge process's start.
var helpFlag = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s+(?:-[A-Za-z], )?(--[a-z][a-z0-9-]*)`)
})

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
	for _, m := range helpFlag().FindAllStringSubmatch(string(out), -1) {
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
