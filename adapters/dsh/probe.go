package dsh

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
)

// Probe reports the capabilities of the DSH web server at BaseURL. It calls
// only read-only methods (session.list, agentPreset.list, workspace.list,
// and session.historyWindow / session.attachment with an empty payload to
// learn whether those routes exist), each bounded by ProbeTimeout. A call
// that fails makes what depends on it unavailable, with the reason; it
// never panics.
func (h *Host) Probe(ctx context.Context) (p core.Probe) {
	p = core.Probe{Harness: harnessName, Binary: h.cfg.BaseURL}
	defer func() {
		if r := recover(); r != nil {
			p.Capabilities = caps(map[string]string{"*": fmt.Sprintf("probe failed: %v", r)})
		}
	}()
	if h.cfg.BaseURL == "" {
		p.Capabilities = caps(map[string]string{"*": "no DSH web server configured (BaseURL is empty)"})
		return p
	}
	try := func(method string, payload any) error {
		cctx, cancel := context.WithTimeout(ctx, h.cfg.ProbeTimeout)
		defer cancel()
		return h.rpc.call(cctx, method, payload, nil)
	}
	missing := map[string]string{}
	listErr := try("session.list", nil)
	if listErr != nil && core.ErrorCode(listErr) != core.CodeHarness && core.ErrorCode(listErr) != core.CodeUnsupported {
		// The server is not there: nothing is available.
		p.Capabilities = caps(map[string]string{"*": listErr.Error()})
		return p
	}
	if listErr != nil {
		missing[core.CapSessionList] = listErr.Error()
	}
	if err := try("agentPreset.list", nil); err != nil {
		missing[core.CapPresetList] = err.Error()
	}
	if err := try("workspace.list", nil); err != nil {
		missing[core.CapWorkspaceList] = err.Error()
	}
	// A route that exists answers an envelope (here an error about the
	// missing session); an absent one answers HTTP 404.
	for _, o := range []struct{ cap, method string }{
		{core.CapHistoryWindow, "session.historyWindow"},
		{core.CapAttachment, "session.attachment"},
	} {
		err := try(o.method, nil)
		switch core.ErrorCode(err) {
		case core.CodeUnsupported, core.CodeUnavailable, core.CodeCancelled, core.CodeTimeout:
			if err != nil {
				missing[o.cap] = err.Error()
			}
		}
	}
	missing[core.CapCompactionFocus] = "DSH's /compact takes no argument"
	p.Capabilities = caps(missing)
	return p
}

// routes names what serves each capability.
var routes = map[string]string{
	core.CapSessionList:      "POST /api/session.list",
	core.CapSessionCreate:    "POST /api/session.create",
	core.CapSessionHistory:   "POST /api/session.history",
	core.CapSessionModels:    "POST /api/session.models",
	core.CapSessionSelect:    "POST /api/session.selectModel",
	core.CapSessionPrompt:    "POST /api/session.prompt (turn followed through session.history)",
	core.CapSessionCancel:    "POST /api/session.cancel",
	core.CapSessionRename:    "POST /api/session.rename",
	core.CapWorkspaceList:    "POST /api/workspace.list",
	core.CapWorkspaceArchive: "POST /api/workspace.archiveSession",
	core.CapPresetList:       "POST /api/agentPreset.list",
	core.CapGoalCreate:       "POST /api/goal.create",
	core.CapGoalPause:        "POST /api/goal.pause (revision re-read once on GOAL_STALE_REVISION)",
	core.CapAttachment:       "POST /api/session.attachment",
	core.CapGoalClear:        "POST /api/goal.clear",
	core.CapHistoryWindow:    "POST /api/session.historyWindow",
	core.CapNativeResume:     "sessions persist on the DSH server; session.history proves one exists",
	core.CapCompactCommand:   "POST /api/commands/execute {line:\"/compact\"}",
	core.CapContextGauge:     "session.history projections.contextPressure",
}

// caps lists every capability, available unless missing names it (or "*"
// names a reason that applies to all).
func caps(missing map[string]string) []core.Capability {
	var out []core.Capability
	add := func(name string, required bool) {
		c := core.Capability{Name: name, Required: required, Available: true, Detail: routes[name]}
		why, ok := missing[name]
		if all, any := missing["*"]; any {
			why, ok = all, true
		}
		if ok {
			c.Available, c.Detail = false, why
		}
		out = append(out, c)
	}
	for _, n := range core.RequiredCapabilities {
		add(n, true)
	}
	for _, n := range core.OptionalCapabilities {
		add(n, false)
	}
	return out
}
