package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Capability is one probed capability: whether the adapter has it and why
// not. Whether a harness needs it is CapabilityNeed's to say.
type Capability struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail,omitempty"`
}

// Probe is what an adapter reports about itself without mutating anything.
type Probe struct {
	Harness      string       `json:"harness"`
	Binary       string       `json:"binary,omitempty"`
	Version      string       `json:"version,omitempty"`
	Capabilities []Capability `json:"capabilities"`
}

// Has reports whether capability name is available.
func (p Probe) Has(name string) bool {
	for _, c := range p.Capabilities {
		if c.Name == name {
			return c.Available
		}
	}
	return false
}

// Missing lists the names among need that are not available, in need's order.
func (p Probe) Missing(need ...string) []string {
	var out []string
	for _, n := range need {
		if !p.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

// Content is one block of a prompt.
type Content struct {
	// Type is "text" or "image".
	Type string `json:"type"`
	// Text is the text of a text block.
	Text string `json:"text,omitempty"`
	// MediaType is the image's MIME type ("image/png"…).
	MediaType string `json:"mediaType,omitempty"`
	// Data is the image, base64-encoded.
	Data string `json:"data,omitempty"`
}

// Preset is a complete tool-and-prompt assembly for one harness.
type Preset struct {
	Name               string   `json:"name"`
	Harness            string   `json:"harness"`
	Description        string   `json:"description,omitempty"`
	Model              string   `json:"model,omitempty"`
	Effort             string   `json:"effort,omitempty"`
	AllowedTools       []string `json:"allowedTools,omitempty"`       // Claude Code
	DisallowedTools    []string `json:"disallowedTools,omitempty"`    // Claude Code
	PermissionMode     string   `json:"permissionMode,omitempty"`     // Claude Code
	AppendSystemPrompt string   `json:"appendSystemPrompt,omitempty"` // Claude Code
	Profile            string   `json:"profile,omitempty"`            // Codex
	ApprovalPolicy     string   `json:"approvalPolicy,omitempty"`     // Codex, ACP: how to answer approvals
	Agent              string   `json:"agent,omitempty"`              // OpenCode, DSH
	// ApprovalRelay false stops Bridge from relaying the harness's
	// permission requests (Claude Code: no --permission-prompt-tool stdio,
	// which adds the AskUserQuestion tool to every request); the harness
	// then decides its own permissions. Unset means relayed.
	ApprovalRelay *bool `json:"approvalRelay,omitempty"`
	// PlanTools false stops Bridge from enabling the harness's plan tools
	// where they are off by default (Claude Code's
	// CLAUDE_CODE_ENABLE_TODO_TOOLS=1, which adds the Task tools to every
	// request; Codex's tools.update_plan.enabled, which adds update_plan);
	// phase-boundary checkpoints then follow only the plans the harness
	// reports anyway. Unset means enabled.
	PlanTools *bool `json:"planTools,omitempty"`
	// Worktree runs each session of the preset in a git worktree of its
	// own (as session/create's worktree: true).
	Worktree bool `json:"worktree,omitempty"`
	// Checkpoint is how a checkpoint of a running session is written
	// (CheckpointFork, the default, or CheckpointInThread); see
	// CheckpointMethodFor.
	Checkpoint CheckpointMethod `json:"checkpoint,omitempty"`
	// ForkServer false makes OpenCode's checkpoint forks run on the live
	// session's own server instead of a fork server (a second `opencode
	// serve` at nice 10, started at the preset's first fork; about 8
	// CPU-seconds to start and 300 MB while it runs). Unset means a fork
	// server.
	ForkServer *bool `json:"forkServer,omitempty"`
}

// Relays reports whether Bridge relays the harness's permission requests
// for sessions of p (ApprovalRelay unset or true).
func (p Preset) Relays() bool { return p.ApprovalRelay == nil || *p.ApprovalRelay }

// WantsPlanTools reports whether Bridge enables the harness's plan tools for
// sessions of p (PlanTools unset or true).
func (p Preset) WantsPlanTools() bool { return p.PlanTools == nil || *p.PlanTools }

// WantsForkServer reports whether checkpoint forks of p's sessions may run
// on a fork server of their own (ForkServer unset or true; OpenCode).
func (p Preset) WantsForkServer() bool { return p.ForkServer == nil || *p.ForkServer }

// CheckpointMethod says how a checkpoint was obtained: fork (asked of a
// native fork of the live session, then discarded: the live conversation is
// untouched), in-thread (asked in the live conversation, because the preset
// says so) or reconstructed (rebuilt from the record without the model).
type CheckpointMethod string

// How a checkpoint was obtained (the checkpoint entry's method).
const (
	// CheckpointFork: asked of a native fork of the live session, which is
	// then discarded; the live conversation is untouched.
	CheckpointFork CheckpointMethod = "fork"
	// CheckpointInThread: asked in the live conversation itself (the request
	// and the reply stay in the harness's context). Only where the preset
	// asks for it.
	CheckpointInThread CheckpointMethod = "in-thread"
	// CheckpointReconstructed: rebuilt by Bridge from the record and the
	// repository, without asking the model.
	CheckpointReconstructed CheckpointMethod = "reconstructed"
)

// CheckpointMethods are the methods, in the order above.
var CheckpointMethods = []CheckpointMethod{CheckpointFork, CheckpointInThread, CheckpointReconstructed}

// CheckpointMethodFor is the one rule for how a checkpoint of a running
// session of preset p is written, given whether the harness can fork it:
// a fork when it can; otherwise in the live thread only when the preset
// says checkpoint: in-thread, else reconstructed from the record. There is
// no silent fallback into the live thread. A preset that says in-thread
// gets in-thread even where a fork is possible (the user asked for it).
func CheckpointMethodFor(p Preset, canFork bool) CheckpointMethod {
	switch {
	case p.Checkpoint == CheckpointInThread:
		return CheckpointInThread
	case canFork:
		return CheckpointFork
	}
	return CheckpointReconstructed
}

// CreateRequest asks a host for a new session.
type CreateRequest struct {
	Cwd    string
	Preset Preset
	Model  string
	Effort string
	Title  string
	// Approve decides the harness's permission requests; nil means the
	// preset's policy (see Approval).
	Approve Approver
}

// ResumeRequest asks a host to resume its own stored session NativeID.
type ResumeRequest struct {
	CreateRequest
	NativeID string
}

// Gauge is a context-window reading from a harness.
type Gauge struct {
	// Used is the tokens in the window.
	Used int64 `json:"used"`
	// Size is the window's size in tokens.
	Size int64 `json:"size"`
}

// Event is what a live session reports while it runs. Exactly one of Entry,
// Gauge or NativeSessionID is normally set.
type Event struct {
	// Entry is appended to the record (context.compacted included).
	Entry *NewEntry
	// Gauge is a context usage reading (harnesses with a context gauge).
	Gauge *Gauge
	// NativeSessionID is the harness's own session id, learned late.
	NativeSessionID string
	// Model is the model the harness reports it is using.
	Model string
}

// EventSink receives a live session's events, in order, from one goroutine at
// a time. It must not block for long.
type EventSink func(Event)

// TurnResult is how a prompt turn ended.
type TurnResult struct {
	StopReason string `json:"stopReason"` // end_turn, cancelled, error, max_tokens…
}

// ExitInfo describes how a harness process ended.
type ExitInfo struct {
	Code       int    `json:"exitCode"`
	StderrTail string `json:"stderrTail,omitempty"`
	Err        string `json:"error,omitempty"`
}

// HostSession is a session as the harness lists it.
type HostSession struct {
	// NativeID is the host's id of the session.
	NativeID string `json:"nativeId"`
	// Title is the session's title.
	Title string `json:"title,omitempty"`
	// Cwd is the working directory.
	Cwd string `json:"cwd,omitempty"`
	// UpdatedAt is when the session last changed.
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
}

// Model is a model a harness offers.
type Model struct {
	// ID is the model's id.
	ID string `json:"id"`
	// Name is the model's display name.
	Name string `json:"name,omitempty"`
	// Efforts lists the reasoning efforts the model accepts.
	Efforts []string `json:"efforts,omitempty"`
	// Vision is true when the model reads images.
	Vision bool `json:"vision,omitempty"`
	// ContextWindow is the model's context window in tokens, when known.
	ContextWindow int64 `json:"contextWindow,omitempty"`
}

// ContextWindower is implemented by hosts that know a model's context
// window without listing models (an id their Models list does not spell,
// such as Claude Code's "sonnet[1m]"); 0 means unknown.
type ContextWindower interface {
	ContextWindow(model string) int64
}

// Efforts is the order of reasoning efforts, lowest first, across harnesses.
var Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// EffortRank is effort's place in Efforts, -1 when unknown (not comparable).
func EffortRank(effort string) int {
	for i, e := range Efforts {
		if e == effort {
			return i
		}
	}
	return -1
}

// Workspace is a working directory a harness knows.
type Workspace struct {
	// Path is the directory.
	Path string `json:"path"`
	// Name is its display name.
	Name string `json:"name,omitempty"`
}

// WorkspacesOf returns the distinct non-empty paths as workspaces, sorted
// by path: what an adapter that knows only its sessions' working
// directories lists.
func WorkspacesOf(paths []string) []Workspace {
	seen := make(map[string]bool, len(paths))
	var out []Workspace
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, Workspace{Path: p})
		}
	}
	slices.SortFunc(out, func(a, b Workspace) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// BridgeHost is the port every harness adapter implements (ARCHITECTURE.md, Capabilities and doctor). A
// method whose capability the adapter does not have returns an error
// wrapping ErrUnsupported, and Probe says so. Optional capabilities are
// separate interfaces (NativeResumer on the host; Compactor, Forker,
// GoalHost, GoalClearer, AttachmentSource on the live session) detected by type
// assertion.
type BridgeHost interface {
	// Harness names the adapter: "claude-code", "codex", "opencode", "acp",
	// "dsh", "rpchost", "fake".
	Harness() string
	// Probe reports the binary, version and capabilities. It calls nothing
	// that mutates and never panics.
	Probe(ctx context.Context) Probe
	// ListSessions (session.list) lists the harness's own sessions.
	ListSessions(ctx context.Context, cwd string) ([]HostSession, error)
	// CreateSession (session.create) starts a new harness session. Events are
	// delivered to sink until the returned Live is closed or dies.
	CreateSession(ctx context.Context, req CreateRequest, sink EventSink) (Live, error)
	// History (session.history) reads the harness's own stored history of a
	// session, mapped to entries.
	History(ctx context.Context, nativeID string) ([]NewEntry, error)
	// Models (session.models) lists the models on offer.
	Models(ctx context.Context) ([]Model, error)
	// Workspaces (workspace.list) lists known working directories.
	Workspaces(ctx context.Context) ([]Workspace, error)
	// ArchiveSession (workspace.archiveSession) archives a harness session.
	ArchiveSession(ctx context.Context, nativeID string) error
	// Presets (agentPreset.list) lists the presets usable with this harness.
	Presets(ctx context.Context) ([]Preset, error)
}

// Live is one running harness session.
type Live interface {
	// NativeID is the harness's own session or thread id ("" until known).
	NativeID() string
	// Prompt (session.prompt) runs one turn and returns when it ends; the
	// turn's entries go to the sink meanwhile. Cancelling ctx abandons the
	// wait, not the turn: use Cancel to stop the harness.
	Prompt(ctx context.Context, content []Content) (TurnResult, error)
	// Cancel (session.cancel) interrupts the running turn.
	Cancel(ctx context.Context) error
	// SelectModel (session.selectModel) switches model and/or effort.
	SelectModel(ctx context.Context, model, effort string) error
	// Rename (session.rename) renames the session on the harness side.
	Rename(ctx context.Context, title string) error
	// Done is closed when the harness process has ended.
	Done() <-chan struct{}
	// Exit tells how the process ended; valid after Done is closed.
	Exit() ExitInfo
	// Close stops the harness process and waits for it.
	Close(ctx context.Context) error
}

// NativeResumer is implemented by hosts that can resume their own stored
// sessions. Resume must prove the resume (Claude Code: system/init carrying
// the requested id; Codex: thread/resume returning the same thread id;
// OpenCode: the session exists) and otherwise return a *ResumeError.
type NativeResumer interface {
	Resume(ctx context.Context, req ResumeRequest, sink EventSink) (Live, error)
}

// ResumeError is a failed native resume, with the harness's own error text.
type ResumeError struct {
	NativeText string
	Err        error
}

func (e *ResumeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("native resume failed: %s: %v", e.NativeText, e.Err)
	}
	return "native resume failed: " + e.NativeText
}

// Unwrap returns the cause.
func (e *ResumeError) Unwrap() error { return e.Err }

// CompactResult is what a harness compaction command reported.
type CompactResult struct {
	FocusApplied bool
	FocusNote    string // why the focus was not applied, when it was not
}

// Compactor is implemented by live sessions whose harness has a compaction
// command. Compact returns once the harness has accepted the command; the
// context.compacted entry arrives through the sink.
type Compactor interface {
	Compact(ctx context.Context, focus string) (CompactResult, error)
}

// Forker is implemented by live sessions whose harness can fork the
// running conversation natively (session.fork). Fork starts a side copy of
// the conversation as it stands, with the live session's own options, in a
// process or thread of its own: the live session is not paused, restarted
// or told, and nothing asked of the fork ever reaches it. Bridge writes
// checkpoints this way (ARCHITECTURE.md, Checkpoints) and discards the fork.
type Forker interface {
	Fork(ctx context.Context) (Fork, error)
}

// Fork is a discardable side copy of a live session.
type Fork interface {
	// Ask runs one turn in the fork (tool use is refused) and returns the
	// assistant's text and what the turn cost.
	Ask(ctx context.Context, prompt string) (ForkReply, error)
	// Close stops the fork and removes what the harness stored for it.
	Close(ctx context.Context) error
}

// ForkReply is the answer to one Fork.Ask.
type ForkReply struct {
	Text string
	// Usage is the turn's token usage; nil when the harness does not report
	// it.
	Usage *TokenUsage
}

// TokenUsage is what a model call cost in tokens, as the harness reports it.
type TokenUsage struct {
	// InputTokens are the prompt's tokens not read from the cache.
	InputTokens int64 `json:"inputTokens"`
	// OutputTokens are the reply's tokens.
	OutputTokens int64 `json:"outputTokens"`
	// CacheReadTokens are prompt tokens read from the provider's cache.
	CacheReadTokens int64 `json:"cacheReadTokens,omitempty"`
	// CacheCreationTokens are prompt tokens written to the cache.
	CacheCreationTokens int64 `json:"cacheCreationTokens,omitempty"`
}

// Add returns the sum of u and v (nil counts as nothing; nil+nil is nil).
func (u *TokenUsage) Add(v *TokenUsage) *TokenUsage {
	if u == nil {
		return v
	}
	if v == nil {
		return u
	}
	return &TokenUsage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens, CacheCreationTokens: u.CacheCreationTokens + v.CacheCreationTokens}
}

// Goal is a resumable objective a host can hold for a session.
type Goal struct {
	Text   string
	Rounds int
}

// GoalHost is implemented by live sessions whose host has goals
// (goal.create, goal.pause).
type GoalHost interface {
	CreateGoal(ctx context.Context, g Goal) (goalID string, err error)
	PauseGoal(ctx context.Context, goalID string) error
}

// GoalClearer is implemented by live sessions that can clear a goal.
type GoalClearer interface {
	ClearGoal(ctx context.Context, goalID string) error
}

// AttachmentSource is implemented by hosts that can recover an image
// attachment referenced in their history (session.attachment).
type AttachmentSource interface {
	Attachment(ctx context.Context, nativeID, ref string) (Content, error)
}

// HistoryWindower is implemented by hosts that read the newest part of a
// session's history in one call (session.historyWindow): at most
// maxMessages user and assistant messages, with what comes between them;
// moreBefore says whether older history was left out.
type HistoryWindower interface {
	HistoryWindow(ctx context.Context, nativeID string, maxMessages int) (entries []NewEntry, moreBefore bool, err error)
}

// Importer is implemented by adapters that can read a harness transcript
// file into entries (session/import, discovery). Each entry carries a
// NativeID so that importing the same file twice adds nothing.
//
// ImportStream reads the transcript at path and hands its entries to sink
// as it reads them, in transcript order, in batches of at most ImportBatch
// entries, so that memory does not grow with the transcript. Each call of
// sink carries the session's header as known so far; its NativeID is the
// same in every call ("" when the transcript names no session). The header
// returned at the end is final (a title or model found late). When
// ImportStream fails, what sink was given must be discarded: the caller
// records an import in one transaction.
type Importer interface {
	ImportStream(ctx context.Context, path string, sink ImportSink, progress func(done, total int64)) (ImportedSession, error)
}

// ImportSink receives one batch of an import: part.Entries are the next
// entries, and the other fields the session's header as known so far. An
// error stops the import and is returned by ImportStream. The sink may keep
// part.Entries (an importer does not reuse a batch it handed out) and may be
// called from the importer's goroutine while the caller writes the
// previous batch.
type ImportSink func(part ImportedSession) error

// ImportBatch is the most entries an Importer hands to its sink at once.
const ImportBatch = 1000

// ImportedSession is a transcript read from disk: its header, and entries
// (all of them from CollectImport; one batch in an ImportSink call).
type ImportedSession struct {
	NativeID string
	Cwd      string
	Model    string
	Title    string
	Entries  []NewEntry
}

// Clock is injected (with IDs) so tests control time and identifiers.
type Clock func() time.Time

// PresetsFor is the one rule for which configured presets apply to a
// harness: those that name it and those that name no harness. The copies
// returned name the harness.
func PresetsFor(presets []Preset, harness string) []Preset {
	var out []Preset
	for _, p := range presets {
		if p.Harness == "" || p.Harness == harness {
			p.Harness = harness
			out = append(out, p)
		}
	}
	return out
}
