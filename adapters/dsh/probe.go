package dsh

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// check is one harmless call of the probe: what it shows, and the call.
type check struct {
	caps    []string
	method  string
	payload any
	// read is a read-only call: only a value shows the capability. Any
	// other call is sent a payload DSH's schema refuses (a wrong type in
	// a field every variant requires), so that it changes nothing: an RPC
	// answer (here "bad-request") shows the route is served, HTTP 404 that
	// it is not.
	read bool
}

// invalid is a payload every session-bound route refuses before acting.
var invalid = invalidSession{}

// Probe asks the DSH web server at BaseURL what it serves; it assumes
// nothing. A capability is available because a harmless call showed it:
// read-only calls (host.describe, session.list, agentPreset.list,
// workspace.list, and, on a session the server already has,
// session.models, session.history and commands/list) must answer with a
// value; every route that would change something is sent a payload DSH's
// own validation refuses, and must answer with an RPC envelope rather than
// HTTP 404. /compact counts only when commands/list lists it (on a server
// with no session yet, when the commands remote answers for sessions; the
// live session checks the list again before compacting). Each call is
// bounded by ProbeTimeout; a failure makes what depends on it unavailable,
// with the reason; it never panics.
func (h *Host) Probe(ctx context.Context) (p core.Probe) {
	p = core.Probe{Harness: harnessName, Binary: h.cfg.BaseURL}
	defer func() {
		if r := recover(); r != nil {
			p.Capabilities = caps(map[string]string{"*": fmt.Sprintf("probe failed: %v", r)}, nil)
		}
	}()
	if h.cfg.BaseURL == "" {
		p.Capabilities = caps(map[string]string{"*": "no DSH web server configured (BaseURL is empty)"}, nil)
		return p
	}
	version, err := h.probeVersion(ctx)
	if err != nil {
		// The server is not there: nothing is available.
		p.Capabilities = caps(map[string]string{"*": err.Error()}, nil)
		return p
	}
	p.Version = version
	var list struct {
		Items []sessionRow `json:"items"`
	}
	listErr := h.probeCall(ctx, "session.list", struct{}{}, &list)
	sample := ""
	if listErr == nil && len(list.Items) > 0 {
		sample = list.Items[0].SessionID
	}
	missing, shown := h.runChecks(ctx, probeChecks(sample), listErr, sample)
	missing[core.CapCompactionFocus] = "DSH's /compact takes no argument (commands/list gives it no input)"
	missing[core.CapPromptSteer] = "not implemented for DeepSeek Harness (its session.prompt mode \"steer\" is not used yet)"
	missing[core.CapApprovalRelay] = "DeepSeek Harness applies its own permission preset; its approvals are not relayed"
	p.Capabilities = caps(missing, shown)
	for i, c := range p.Capabilities {
		if c.Name == core.CapSessionFork && c.Available {
			p.Capabilities[i].Detail += "; forks are made " + h.forkWhere()
		}
	}
	return p
}

// probeCall is one call of the probe, bounded by ProbeTimeout.
func (h *Host) probeCall(ctx context.Context, method string, payload, out any) error {
	cctx, cancel := context.WithTimeout(ctx, h.cfg.ProbeTimeout)
	defer cancel()
	return h.rpc.call(cctx, method, payload, out)
}

// probeVersion asks host.describe for the version of DSH's web host API
// ("" when the server does not say). An error means the server is not
// there; a server without host.describe may still serve the rest.
func (h *Host) probeVersion(ctx context.Context) (string, error) {
	var host struct {
		Version string `json:"version"`
	}
	if err := h.probeCall(ctx, "host.describe", struct{}{}, &host); err != nil {
		switch core.ErrorCode(err) {
		case core.CodeHarness, core.CodeUnsupported:
			return "", nil
		}
		return "", err
	}
	if host.Version == "" {
		return "", nil
	}
	// DSH reports its web host API's version, not the package's.
	return "web host API " + host.Version, nil
}

// probeChecks lists the probe's calls; sample is a session the server
// already has ("" when it has none: the session-bound reads are then sent
// an unknown session, which a served route refuses).
func probeChecks(sample string) []check {
	checks := []check{
		{caps: []string{core.CapSessionList}, method: "session.list", payload: struct{}{}, read: true},
		{caps: []string{core.CapPresetList}, method: "agentPreset.list", payload: struct{}{}, read: true},
		{caps: []string{core.CapWorkspaceList}, method: "workspace.list", payload: struct{}{}, read: true},
		{caps: []string{core.CapSessionModels}, method: "llm.models", read: true},
		{caps: []string{core.CapSessionCreate}, method: "session.create", payload: invalidCreate{}},
		{caps: []string{core.CapSessionSelect}, method: "session.selectModel", payload: invalid},
		{caps: []string{core.CapSessionPrompt}, method: "session.prompt", payload: invalid},
		{caps: []string{core.CapSessionCancel}, method: "session.cancel", payload: invalid},
		{caps: []string{core.CapSessionRename}, method: "session.rename", payload: invalid},
		{caps: []string{core.CapSessionFork}, method: "session.fork", payload: invalid},
		{caps: []string{core.CapWorkspaceArchive}, method: "workspace.archiveSession", payload: invalid},
		{caps: []string{core.CapGoalCreate}, method: "goal.create", payload: invalid},
		{caps: []string{core.CapGoalPause}, method: "goal.pause", payload: invalid},
		{caps: []string{core.CapGoalClear}, method: "goal.clear", payload: invalid},
		{caps: []string{core.CapAttachment}, method: "session.attachment", payload: invalid},
		{caps: []string{core.CapHistoryWindow}, method: "session.historyWindow", payload: invalid},
	}
	id, read := sample, true
	if sample == "" {
		id, read = "session-00000000-0000-4000-8000-000000000000", false
	}
	return append(checks,
		check{caps: []string{core.CapSessionHistory, core.CapNativeResume, core.CapContextGauge}, method: "session.history",
			payload: historyArgs{SessionID: id, MaxMessages: 1}, read: read},
		check{caps: []string{core.CapCompactCommand}, method: "commands/list",
			payload: remoteArgs[agentArgs]{Args: agentArgs{AgentID: id}}, read: read})
}

// runChecks makes the checks' calls at once (session.list's answer is
// listErr, already known) and returns why capabilities are missing and
// the details of those shown.
func (h *Host) runChecks(ctx context.Context, checks []check, listErr error, sample string) (missing, shown map[string]string) {
	var mu sync.Mutex
	missing, shown = map[string]string{}, map[string]string{}
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Go(func() {
			var raw json.RawMessage
			var err error
			switch c.method {
			case "session.list":
				err = listErr
			case "llm.models":
				err = h.probeCatalog(ctx)
			default:
				err = h.probeCall(ctx, c.method, c.payload, &raw)
			}
			why, how := judge(c, err, raw, sample)
			mu.Lock()
			defer mu.Unlock()
			for _, name := range c.caps {
				if why != "" {
					missing[name] = why
				} else if d := how[name]; d != "" {
					shown[name] = d
				}
			}
		})
	}
	wg.Wait()
	return missing, shown
}

// probeCatalog checks that the server has a model catalog, bounded by
// ProbeTimeout.
func (h *Host) probeCatalog(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, h.cfg.ProbeTimeout)
	defer cancel()
	cat, err := h.catalog(cctx, "")
	if err == nil && len(cat.Groups) == 0 {
		err = core.Errorf(core.CodeHarness, "dsh: the model catalog is empty")
	}
	return err
}

// judge reads one check's answer: why the capabilities it covers are
// unavailable ("" when the call showed them), and details per capability
// (a reason a single one is missing is returned as a detail starting with
// "!").
func judge(c check, err error, raw json.RawMessage, sample string) (string, map[string]string) {
	how := map[string]string{}
	if err != nil {
		code := core.ErrorCode(err)
		if c.read || code == core.CodeUnsupported || code == core.CodeUnavailable || code == core.CodeCancelled || code == core.CodeTimeout {
			return err.Error(), nil
		}
		if rpcErr(err) == nil {
			return err.Error(), nil
		}
		// An RPC error answer: the route is served and refused the
		// invalid payload (or the unknown session) without acting.
		for _, name := range c.caps {
			how[name] = fmt.Sprintf("POST /api/%s served (answered %s to a payload it refuses)", c.method, rpcErr(err).Code)
		}
		if c.method == "commands/list" {
			how[core.CapCompactCommand] = "commands remote served (commands/list answered " + rpcErr(err).Code +
				" for an unknown session); /compact is looked up in each session's commands/list"
		}
		if c.method == "session.history" {
			how[core.CapContextGauge] = "session.history served; no session yet to show projections.contextPressure on"
		}
		return "", how
	}
	switch c.method {
	case "commands/list":
		var cmds []struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &cmds)
		for _, cmd := range cmds {
			if cmd.Name == "compact" {
				return "", map[string]string{core.CapCompactCommand: "commands/list of " + sample + " lists compact; run with commands/execute {line:\"/compact\"}"}
			}
		}
		return "commands/list of " + sample + " does not list compact", nil
	case "session.history":
		var hv struct {
			Projections struct {
				Values map[string]json.RawMessage `json:"values"`
			} `json:"projections"`
		}
		_ = json.Unmarshal(raw, &hv)
		how[core.CapSessionHistory] = "session.history answered for " + sample
		how[core.CapNativeResume] = "sessions persist on the DSH server; session.history answered for " + sample
		if _, ok := hv.Projections.Values["contextPressure"]; ok {
			how[core.CapContextGauge] = "session.history projections.contextPressure (shown on " + sample + ")"
		} else {
			how[core.CapContextGauge] = "!session.history of " + sample + " has no contextPressure projection"
		}
		return "", how
	}
	return "", nil
}

// routes names what serves each capability (the detail of an available
// one the probe has no more specific word for).
var routes = map[string]string{
	core.CapSessionList:      "POST /api/session.list",
	core.CapSessionCreate:    "POST /api/session.create",
	core.CapSessionHistory:   "POST /api/session.history",
	core.CapSessionModels:    "POST /api/llm.models (a session's own: session.models)",
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
	core.CapSessionFork:      "POST /api/session.fork (a child seeded through the last completed turn; archived afterwards, as DSH has no session delete)",
}

// caps lists every capability, available unless missing names it (or "*"
// names a reason that applies to all), with shown's detail when it has
// one (a detail starting with "!" is a reason it is missing).
func caps(missing, shown map[string]string) []core.Capability {
	var out []core.Capability
	add := func(name string) {
		c := core.Capability{Name: name, Available: true, Detail: routes[name]}
		if d, ok := shown[name]; ok && d != "" {
			c.Detail = d
			if d[0] == '!' {
				c.Available, c.Detail = false, d[1:]
			}
		}
		why, ok := missing[name]
		if all, any := missing["*"]; any {
			why, ok = all, true
		}
		if ok {
			c.Available, c.Detail = false, why
		}
		out = append(out, c)
	}
	for _, n := range core.Capabilities {
		add(n)
	}
	return out
}
