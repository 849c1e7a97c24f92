package core

// Capability names, in the port's spelling (doctor prints them; a hosting
// client answers host/<name>).
const (
	CapSessionList      = "session.list"
	CapSessionCreate    = "session.create"
	CapSessionHistory   = "session.history"
	CapSessionModels    = "session.models"
	CapSessionSelect    = "session.selectModel"
	CapSessionPrompt    = "session.prompt"
	CapSessionCancel    = "session.cancel"
	CapSessionRename    = "session.rename"
	CapWorkspaceList    = "workspace.list"
	CapWorkspaceArchive = "workspace.archiveSession"
	CapPresetList       = "agentPreset.list"
	CapGoalCreate       = "goal.create"
	CapGoalPause        = "goal.pause"
	CapAttachment       = "session.attachment"
	CapGoalClear        = "goal.clear"
	CapHistoryWindow    = "session.historyWindow"
	CapNativeResume     = "native.resume"
	CapCompactCommand   = "compaction.command"
	CapCompactionFocus  = "compaction.focus"
	CapContextGauge     = "context.gauge"
	// CapApprovalRelay: the harness's tool permission requests reach
	// CreateRequest.Approve (and so the client's user).
	CapApprovalRelay = "approval.relay"
	// CapSessionFork: the live session can be forked natively (core.Forker),
	// so a checkpoint is written beside the live thread, never in it.
	CapSessionFork = "session.fork"
	// CapPromptSteer: a prompt can be delivered into the running turn
	// (the live session implements Steerer).
	CapPromptSteer = "prompt.steer"
)

// ClientHosted is implemented by hosts whose sessions a client hosts
// itself (host-over-RPC): their harness's permission requests arrive as
// hosted/requestPermission.
type ClientHosted interface {
	ClientHosted() bool
}

// Capabilities lists every capability once, in report order.
var Capabilities = []string{CapSessionCreate, CapSessionPrompt, CapSessionCancel,
	CapSessionList, CapSessionHistory, CapSessionModels, CapSessionSelect, CapSessionRename,
	CapWorkspaceList, CapWorkspaceArchive, CapPresetList, CapAttachment, CapHistoryWindow,
	CapNativeResume, CapSessionFork, CapCompactCommand, CapCompactionFocus, CapContextGauge, CapApprovalRelay,
	CapGoalCreate, CapGoalPause, CapGoalClear, CapPromptSteer}

// RequiredCapabilities are those without which Bridge cannot drive a
// session of a harness at all: start one, run a turn, stop a turn.
var RequiredCapabilities = []string{CapSessionCreate, CapSessionPrompt, CapSessionCancel}

// OptionalCapabilities are the others, in report order: Bridge works
// without each, doing less (see CapabilityNeed).
var OptionalCapabilities = func() []string {
	var out []string
	for _, c := range Capabilities {
		if !isRequired(c) {
			out = append(out, c)
		}
	}
	return out
}()

func isRequired(name string) bool {
	for _, r := range RequiredCapabilities {
		if r == name {
			return true
		}
	}
	return false
}

// Need says how much a harness needs a capability.
type Need string

// Needs.
const (
	// NeedRequired: without it Bridge cannot use the harness.
	NeedRequired Need = "required"
	// NeedOptional: Bridge uses it when available and does less without.
	NeedOptional Need = "optional"
	// NeedNotApplicable: the harness has no such feature at all, and
	// nothing Bridge does depends on it.
	NeedNotApplicable Need = "not_applicable"
)

// without says what Bridge does when an optional capability is missing.
var without = map[string]string{
	CapSessionList:      "Bridge lists only the sessions it recorded",
	CapSessionHistory:   "history comes from Bridge's record only",
	CapSessionModels:    "the model is the preset's or the harness's default",
	CapSessionSelect:    "a migration cannot switch the target's model; it says so in a warning",
	CapSessionRename:    "titles change in Bridge's record only",
	CapWorkspaceList:    "working directories come from Bridge's record",
	CapWorkspaceArchive: "archiving hides the session in Bridge only",
	CapPresetList:       "only presets from config.json apply",
	CapAttachment:       "images come from Bridge's own copies of prompts",
	CapHistoryWindow:    "history is read whole",
	CapNativeResume:     "a resume restores from the latest Bridge checkpoint",
	CapSessionFork:      "a checkpoint of a running session is rebuilt from the record (reconstructed), or asked in the live thread where the preset sets checkpoint: in-thread",
	CapCompactCommand:   "session/compact writes a Bridge checkpoint instead",
	CapCompactionFocus:  "a compaction focus is reported as not applied",
	CapContextGauge:     "Bridge estimates the context window from the record",
	CapApprovalRelay:    "the harness decides its own tool permissions; the client is never asked",
	CapGoalCreate:       "a migration sends the handoff as the target's first prompt",
	CapGoalPause:        "a migration sends the handoff as the target's first prompt",
	CapGoalClear:        "a goal is paused, never cleared",
	CapPromptSteer:      "a prompt sent while a turn runs waits in Bridge's queue for the turn to end",
}

// CapabilityNeed is the one rule saying whether capability name is
// required, optional or not applicable to the harness whose probe is p,
// with the reason. Required are RequiredCapabilities. Goals are a feature
// some harnesses have and others do not: a harness without goal.create
// has no goals, so every goal capability is not applicable to it (a
// migration to it sends the handoff as its first prompt). Likewise
// compaction.focus is not applicable without compaction.command. Every
// other capability is optional.
func CapabilityNeed(name string, p Probe) (Need, string) {
	switch {
	case isRequired(name):
		return NeedRequired, "Bridge cannot drive a session without it"
	case name == CapGoalClear && !p.Has(CapGoalCreate):
		return NeedNotApplicable, "the harness has no goals"
	case (name == CapGoalCreate || name == CapGoalPause) && !p.Has(CapGoalCreate):
		return NeedNotApplicable, "the harness has no goals: a migration to it sends the handoff as its first prompt"
	case name == CapCompactionFocus && !p.Has(CapCompactCommand):
		return NeedNotApplicable, "the harness has no compaction command"
	}
	if w, ok := without[name]; ok {
		return NeedOptional, "without it " + w
	}
	return NeedOptional, "not a capability Bridge uses"
}

// AssessedCapability is one capability of a probe, judged.
type AssessedCapability struct {
	Capability
	Need   Need
	Reason string
}

// Assessment is a probe judged by CapabilityNeed.
type Assessment struct {
	Probe
	// Installed is false when the adapter found no program (or server) to
	// drive: it reported neither a binary nor a version.
	Installed bool
	// OK is true when the harness is installed and every required
	// capability is available.
	OK bool
	// Missing lists the required capabilities that are not available.
	Missing []string
	// Assessed lists every capability once, in Capabilities order, then
	// any the adapter reported that Bridge does not know.
	Assessed []AssessedCapability
}

// Assess judges a probe: every capability appears once; one the adapter
// did not report is unavailable.
func Assess(p Probe) Assessment {
	byName := map[string]Capability{}
	var extra []string
	for _, c := range p.Capabilities {
		if _, dup := byName[c.Name]; !dup {
			byName[c.Name] = c
			extra = append(extra, c.Name)
		}
	}
	a := Assessment{Probe: p, Installed: p.Binary != "" || p.Version != ""}
	add := func(name string) {
		c, ok := byName[name]
		if !ok {
			c = Capability{Name: name, Detail: "not reported by the adapter"}
		}
		need, reason := CapabilityNeed(name, p)
		a.Assessed = append(a.Assessed, AssessedCapability{Capability: c, Need: need, Reason: reason})
		if need == NeedRequired && !c.Available {
			a.Missing = append(a.Missing, name)
		}
	}
	known := map[string]bool{}
	for _, n := range Capabilities {
		known[n] = true
		add(n)
	}
	for _, n := range extra {
		if !known[n] {
			a.Assessed = append(a.Assessed, AssessedCapability{Capability: byName[n], Need: NeedOptional, Reason: "not a capability Bridge uses"})
		}
	}
	a.OK = a.Installed && len(a.Missing) == 0
	return a
}

// hostInterfaces are the capabilities a host provides through an optional
// interface of its own (live-session capabilities are checked when a
// session runs).
var hostInterfaces = map[string]func(BridgeHost) bool{
	CapNativeResume: func(h BridgeHost) bool { _, ok := h.(NativeResumer); return ok },
	CapAttachment:   func(h BridgeHost) bool { _, ok := h.(AttachmentSource); return ok },
}

// Confirm makes p say a host-level capability is available only when the
// adapter also implements it: a capability is available exactly when the
// adapter implements it and its probe confirms it.
func Confirm(h BridgeHost, p Probe) Probe {
	caps := make([]Capability, len(p.Capabilities))
	copy(caps, p.Capabilities)
	for i, c := range caps {
		if implements, ok := hostInterfaces[c.Name]; ok && c.Available && !implements(h) {
			caps[i].Available = false
			caps[i].Detail = "the adapter does not implement it (its probe claimed it)"
		}
	}
	p.Capabilities = caps
	return p
}
