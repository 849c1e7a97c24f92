package codex

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// capMethods names, per capability, the app-server methods it needs. The
// probe asks the installed program for its own protocol schema
// (`codex app-server generate-json-schema`, which writes only to a
// temporary directory) and reports a capability available when every
// method is in it.
var capMethods = map[string][]string{
	core.CapSessionList:      {"thread/list"},
	core.CapSessionCreate:    {"thread/start"},
	core.CapSessionHistory:   {"thread/read"},
	core.CapSessionModels:    {"model/list"},
	core.CapSessionSelect:    {"turn/start"},
	core.CapSessionPrompt:    {"turn/start"},
	core.CapSessionCancel:    {"turn/interrupt"},
	core.CapSessionRename:    {"thread/name/set"},
	core.CapWorkspaceList:    {"thread/list"},
	core.CapWorkspaceArchive: {"thread/archive"},
	core.CapGoalCreate:       {"thread/goal/set"},
	core.CapGoalPause:        {"thread/goal/set"},
	core.CapGoalClear:        {"thread/goal/clear"},
	core.CapNativeResume:     {"thread/resume"},
	core.CapCompactCommand:   {"thread/compact/start"},
	core.CapPromptSteer:      {"turn/steer"},
}

var capDetail = map[string]string{
	core.CapSessionList:      "thread/list",
	core.CapSessionHistory:   "thread/read + rollout file",
	core.CapSessionSelect:    "turn/start model/effort overrides",
	core.CapWorkspaceList:    "working directories of thread/list",
	core.CapWorkspaceArchive: "thread/archive",
	core.CapGoalCreate:       "thread/goal/set",
	core.CapGoalPause:        "thread/goal/set status paused",
	core.CapNativeResume:     "thread/resume returning the same thread id",
	core.CapCompactCommand:   "thread/compact/start",
	core.CapContextGauge:     "thread/tokenUsage/updated",
	core.CapPromptSteer:      "turn/steer into the running turn",
}

// Probe reports the binary, its version and the capabilities its protocol
// offers. It runs `codex --version` and the schema generator, nothing that
// touches sessions, and never panics.
func (h *Host) Probe(ctx context.Context) (pr core.Probe) {
	pr = core.Probe{Harness: Harness}
	defer func() {
		if r := recover(); r != nil {
			pr.Capabilities = h.capabilities(nil, "probe failed")
		}
	}()
	bin, err := h.binary()
	if err != nil {
		pr.Capabilities = h.capabilities(nil, err.Error())
		return pr
	}
	pr.Binary = bin
	vctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(vctx, bin, "--version")
	cmd.Env = h.environ()
	out, err := cmd.Output()
	if err != nil {
		pr.Capabilities = h.capabilities(nil, "`codex --version` failed: "+err.Error())
		return pr
	}
	pr.Version = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "codex-cli "))
	methods, err := h.cachedMethods(vctx, bin, pr.Version)
	if err != nil {
		pr.Capabilities = h.capabilities(nil, "protocol schema unavailable: "+err.Error())
		return pr
	}
	pr.Capabilities = h.capabilities(methods, "")
	return pr
}

// cachedMethods returns protocolMethods, remembered per binary and version.
func (h *Host) cachedMethods(ctx context.Context, bin, version string) (map[string]bool, error) {
	key := bin + "\x00" + version
	h.mu.Lock()
	m, ok := h.methods[key]
	h.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := h.protocolMethods(ctx, bin)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.methods == nil {
		h.methods = map[string]map[string]bool{}
	}
	h.methods[key] = m
	h.mu.Unlock()
	return m, nil
}

// protocolMethods lists the client request methods of the installed
// program's app-server protocol.
func (h *Host) protocolMethods(ctx context.Context, bin string) (map[string]bool, error) {
	dir, err := os.MkdirTemp("", "bridge-codex-schema-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, bin, "app-server", "generate-json-schema", "--out", dir)
	cmd.Env = h.environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, &exec.Error{Name: strings.TrimSpace(string(out)), Err: err}
	}
	b, err := os.ReadFile(filepath.Join(dir, "ClientRequest.json"))
	if err != nil {
		return nil, err
	}
	return requestMethods(b)
}

// requestMethods reads the method names out of a ClientRequest.json schema.
func requestMethods(schema []byte) (map[string]bool, error) {
	var s struct {
		OneOf []struct {
			Properties struct {
				Method struct {
					Enum []string `json:"enum"`
				} `json:"method"`
			} `json:"properties"`
		} `json:"oneOf"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, v := range s.OneOf {
		for _, e := range v.Properties.Method.Enum {
			m[e] = true
		}
	}
	return m, nil
}

// capabilities builds the report; methods nil means nothing is available
// and why says so.
func (h *Host) capabilities(methods map[string]bool, why string) []core.Capability {
	var caps []core.Capability
	add := func(name string) {
		c := core.Capability{Name: name, Detail: capDetail[name]}
		if methods == nil {
			c.Detail = why
			caps = append(caps, c)
			return
		}
		switch name {
		case core.CapSessionPrompt, core.CapSessionCreate, core.CapSessionCancel, core.CapSessionModels,
			core.CapSessionRename, core.CapSessionSelect, core.CapSessionList, core.CapSessionHistory,
			core.CapWorkspaceList, core.CapWorkspaceArchive, core.CapGoalCreate, core.CapGoalPause,
			core.CapGoalClear, core.CapNativeResume, core.CapCompactCommand, core.CapPromptSteer:
			c.Available = true
			for _, m := range capMethods[name] {
				if !methods[m] {
					c.Available = false
					c.Detail = "app-server has no " + m
				}
			}
		case core.CapPresetList:
			c.Available = true
			c.Detail = "configured presets (Codex profiles)"
		case core.CapContextGauge:
			c.Available = methods["turn/start"]
		case core.CapApprovalRelay:
			c.Available = methods["thread/start"]
			c.Detail = "item/commandExecution/requestApproval and item/fileChange/requestApproval (threads run with approvalPolicy untrusted)"
		case core.CapCompactionFocus:
			c.Detail = "thread/compact/start takes no focus"
		case core.CapAttachment:
			c.Detail = "image attachments are not recovered from Codex threads"
		case core.CapHistoryWindow:
			c.Detail = "not implemented for codex"
		case core.CapSessionFork:
			c.Available = methods["thread/fork"]
			c.Detail = "a side app-server process (" + h.sidePriority() + ", " + h.spareText() + "): thread/fork (ephemeral) with the session's own options"
			if !c.Available {
				c.Detail = "app-server has no thread/fork"
			}
		}
		caps = append(caps, c)
	}
	for _, n := range core.Capabilities {
		add(n)
	}
	return caps
}
