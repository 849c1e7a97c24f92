package opencode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// versionTimeout bounds `opencode --version`. It takes about 1.4 s, but its
// first run under a new HOME sets up OpenCode's own folders, and on a loaded
// machine (CI with two shared cores) that ran past 15 s: the probe then
// reported every capability unavailable.
const versionTimeout = 60 * time.Second

// Probe reports the program, its version and the capabilities of OpenCode's
// server API (1.18.33 routes). It runs only `opencode --version`: no server
// is started and nothing is changed. It never panics.
func (h *Host) Probe(ctx context.Context) (p core.Probe) {
	p = core.Probe{Harness: harnessName}
	defer func() {
		if r := recover(); r != nil {
			p.Capabilities = capabilities(false, "probe failed")
		}
	}()
	bin, err := h.binary()
	if err != nil {
		p.Capabilities = capabilities(false, err.Error())
		return p
	}
	p.Binary = bin
	version, err := h.version(ctx, bin)
	if err != nil {
		p.Capabilities = capabilities(false, "`"+h.cfg.Command+" --version` failed: "+err.Error())
		return p
	}
	p.Version = version
	p.Capabilities = capabilities(true, "")
	return p
}

// versions caches `--version` answers by program path, size and time.
var versions sync.Map

// version runs `bin --version` (bounded by versionTimeout), remembering the
// answer for an unchanged program.
func (h *Host) version(ctx context.Context, bin string) (string, error) {
	key := bin
	if st, err := os.Stat(bin); err == nil {
		key = fmt.Sprintf("%s|%d|%d", bin, st.Size(), st.ModTime().UnixNano())
	}
	if v, ok := versions.Load(key); ok {
		return v.(string), nil
	}
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(vctx, bin, "--version")
	if env, err := h.cfg.environ(); err == nil {
		cmd.Env = env
	}
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	versions.Store(key, v)
	return v, nil
}

// capabilities lists every capability; the server-backed ones are
// available when the program runs, with the route that provides them.
func capabilities(ok bool, why string) []core.Capability {
	detail := func(route string) string {
		if !ok {
			return why
		}
		return route
	}
	c := func(name string, avail bool, d string) core.Capability {
		return core.Capability{Name: name, Available: avail, Detail: d}
	}
	return []core.Capability{
		c(core.CapSessionList, ok, detail("GET /session")),
		c(core.CapSessionCreate, ok, detail("POST /session")),
		c(core.CapSessionHistory, ok, detail("GET /session/{id}/message")),
		c(core.CapSessionModels, ok, detail("GET /config/providers")),
		c(core.CapSessionSelect, ok, detail("model and variant of each POST /session/{id}/message")),
		c(core.CapSessionPrompt, ok, detail("POST /session/{id}/message")),
		c(core.CapSessionCancel, ok, detail("POST /session/{id}/abort")),
		c(core.CapSessionRename, ok, detail("PATCH /session/{id} {title}")),
		c(core.CapWorkspaceList, ok, detail("directories of GET /session")),
		c(core.CapWorkspaceArchive, ok, detail("PATCH /session/{id} {time.archived}")),
		c(core.CapPresetList, ok, detail("GET /agent")),
		c(core.CapGoalCreate, false, "OpenCode has no goals"),
		c(core.CapGoalPause, false, "OpenCode has no goals"),
		c(core.CapAttachment, false, "not implemented for OpenCode"),
		c(core.CapGoalClear, false, "OpenCode has no goals"),
		c(core.CapHistoryWindow, false, "GET /session/{id}/message returns the whole history"),
		c(core.CapSessionFork, ok, detail("POST /session/{id}/fork copies the session on a second opencode serve over the same data (started by the first fork, nice 10 once it answers; on the live server until then, or always with a preset's forkServer false); the copy is asked, then deleted (DELETE /session/{id})")),
		c(core.CapNativeResume, ok, detail("sessions persist in OpenCode's database; GET /session/{id} proves one exists")),
		c(core.CapCompactCommand, ok, detail("POST /session/{id}/summarize")),
		c(core.CapCompactionFocus, false, "summarize takes no focus"),
		c(core.CapPromptSteer, false, "not implemented for OpenCode"),
		c(core.CapContextGauge, ok, detail("each finished step's token usage (input + cache read + output) against the model's limit.context from GET /config/providers")),
		c(core.CapApprovalRelay, ok, detail("permission.asked events answered with POST /permission/{id}/reply (asked where OpenCode's permission config says ask); the question tool's question.asked with POST /question/{id}/reply or /reject")),
	}
}
