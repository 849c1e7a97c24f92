// Package fake is a scripted, in-process harness for tests: a
// core.BridgeHost with every optional interface, whose "model" does what
// the prompt text says, line by line. End-to-end tests drive it through the
// real bridge binary with plain session/prompt calls; unit tests can script
// it in Go with Options.Script.
//
// # Scripts
//
// A prompt is a script when every non-blank line starts with a directive
// (the text blocks of a prompt are joined with newlines first). Otherwise it
// is answered with one assistant.message "fake: " + the prompt text (the
// echo), so prose that merely quotes a directive never runs it; except that
// a summary worker's request (handoff.Instruction and the folded material)
// is answered with a five-part handoff written from that material, so
// migration works without a script. docs/fake-harness.md documents the
// directives for users:
//
//	say <text>            assistant.message {text}
//	json <text>           assistant.message with the literal text (checkpoint replies)
//	tool <name> [arg]     tool.started {toolId, name, input} + tool.completed {toolId, name, output}
//	ask <name> [arg]      asks the session's approver (CreateRequest.Approve) first: allowed,
//	                      as tool; refused, tool.completed {isError: true, output: "refused…"}
//	stream <N>            N assistant.message entries, as fast as possible
//	compact auto|manual [pre post]
//	                      context.compacted (core.Compacted, harness "fake"); token
//	                      counts default to the current usage and a tenth of it
//	usage <used>          sets the context usage; a Gauge event when Options.Gauge
//	sleep <ms>            waits; Cancel ends the turn ("cancelled")
//	hang                  waits until Cancel, Close or the prompt's ctx ends
//	crash <code>          the live session dies: Done closes, Exit reports code and
//	                      the stderr tail "fake: crashed on request"
//	file <path>           artifact.created {path} (nothing is written to disk)
//	decide <text>         worker.result {status: "completed", decisions: [text]}
//	toolstart <name> [arg] tool.started only: the tool never completes
//	think <text>          harness.event {type: "agent_thought", text} (the model's thinking)
//	plan <st>:<text>[; <st>:<text>...]
//	                      plan.updated {steps: [{text, status}]} (status pending,
//	                      in_progress or completed)
//	next <directive>      runs the directive on the next prompt of this session,
//	                      instead of what that prompt says (e.g. "next json {...}"
//	                      answers the checkpoint request Bridge sends next)
//	after <k> <directive> the same, k prompts ahead
//	worker <directive>    runs the directive on the first prompt of the next
//	                      session this Host creates (a summary worker or a
//	                      migration target); kept in memory only
//
// A script line with bad arguments makes Prompt fail with a core.CodeInvalid
// error naming the line. Every emitted entry has a unique NativeID. The fake
// never emits user.message for the prompts it receives (the service records
// those), but its own stored history (History, HistoryWindow) holds them,
// with image blocks kept as attachments ("attachments": [{ref, mediaType}])
// that Attachment returns. When Options.Gauge is set, a Gauge event with
// the running usage (about a token per four characters) ends every turn.
//
// # Capabilities
//
// Every capability (core.Capabilities) is available unless named in
// Options.Missing (compaction.focus also needs Options.CompactFocus, and
// context.gauge Options.Gauge). A capability switched off is reported by
// Probe as unavailable with a detail, and its method returns an error
// wrapping core.ErrUnsupported. The optional interfaces are always
// implemented, so the type assertion succeeds even when the capability is
// off: callers must consult Probe (as Bridge does), and the call itself
// still refuses with ErrUnsupported.
package fake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Harness is the harness name the fake reports.
const Harness = "fake"

// Options configures a fake host.
type Options struct {
	// VisionAdmission makes a text-only model (fake-small) refuse a prompt
	// with images at admission (core.ErrImagesRefused), as a text-only
	// harness does; without it every model takes images.
	VisionAdmission bool
	// Missing names capabilities (core.Cap… names) to switch off. Names
	// that are not capabilities are ignored (OptionsFromEnv refuses them).
	Missing []string
	// StateDir holds native sessions as <nativeID>.jsonl files, so that a
	// new Host (a new bridge process) can natively resume them. Empty keeps
	// them in memory, for this Host only.
	StateDir string
	// GoalPauseFails makes PauseGoal fail (migration's "pause failed" path).
	GoalPauseFails bool
	// CompactFocus makes the compaction command honour a focus; otherwise
	// Compact reports FocusApplied false with a FocusNote.
	CompactFocus bool
	// Gauge makes the fake report context usage (Gauge events).
	Gauge bool
	// Window is the context window size the gauge reports (0: 200,000).
	Window int64
	// Script, when set, is asked for the steps of each prompt (the prompt's
	// text blocks joined with newlines). A nil result falls back to the text
	// script. Directives queued with next/after still come first.
	Script func(prompt string) []Step
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Host is the fake harness. It is safe for concurrent use.
type Host struct {
	opts    Options
	missing map[string]bool

	mu     sync.Mutex
	mem    map[string][]byte // sessions when StateDir is empty
	worker []string          // directives for the next new session's first prompt
	forks  []string          // the prompts asked of forks, oldest first
}

// Compile-time checks: the host and its live sessions implement the port
// and every optional interface.
var (
	_ core.BridgeHost       = (*Host)(nil)
	_ core.NativeResumer    = (*Host)(nil)
	_ core.AttachmentSource = (*Host)(nil)
	_ core.Importer         = (*Host)(nil)
	_ core.Live             = (*Live)(nil)
	_ core.Compactor        = (*Live)(nil)
	_ core.GoalHost         = (*Live)(nil)
	_ core.GoalClearer      = (*Live)(nil)
	_ core.Forker           = (*Live)(nil)
)

// New returns a fake host configured by opts.
func New(opts Options) *Host {
	if opts.Window <= 0 {
		opts.Window = 200_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Host{opts: opts, missing: map[string]bool{}, mem: map[string][]byte{}}
	for _, m := range opts.Missing {
		h.missing[m] = true
	}
	return h
}

// Environment variables read by OptionsFromEnv.
const (
	EnvMissing        = "BRIDGE_FAKE_MISSING"          // comma-separated capability names
	EnvGauge          = "BRIDGE_FAKE_GAUGE"            // "1" or "true"
	EnvWindow         = "BRIDGE_FAKE_WINDOW"           // tokens
	EnvCompactFocus   = "BRIDGE_FAKE_COMPACT_FOCUS"    // "1" or "true"
	EnvGoalPauseFails = "BRIDGE_FAKE_GOAL_PAUSE_FAILS" // "1" or "true"
)

// OptionsFromEnv builds Options from the BRIDGE_FAKE_* variables, so an
// end-to-end test can configure the fake inside a real bridge process.
// stateDir becomes Options.StateDir. An unknown capability name or a
// malformed value is an error.
func OptionsFromEnv(getenv func(string) string, stateDir string) (Options, error) {
	o := Options{StateDir: stateDir}
	known := map[string]bool{}
	for _, c := range core.Capabilities {
		known[c] = true
	}
	for _, m := range strings.Split(getenv(EnvMissing), ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if !known[m] {
			return Options{}, core.Errorf(core.CodeInvalid, "%s: %q is not a capability", EnvMissing, m)
		}
		o.Missing = append(o.Missing, m)
	}
	var err error
	flag := func(name string) bool {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return false
		}
		b, perr := strconv.ParseBool(v)
		if perr != nil && err == nil {
			err = core.Errorf(core.CodeInvalid, "%s: %q is not a boolean", name, v)
		}
		return b
	}
	o.Gauge, o.CompactFocus, o.GoalPauseFails = flag(EnvGauge), flag(EnvCompactFocus), flag(EnvGoalPauseFails)
	if v := strings.TrimSpace(getenv(EnvWindow)); v != "" {
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n <= 0 {
			return Options{}, core.Errorf(core.CodeInvalid, "%s: %q is not a positive number", EnvWindow, v)
		}
		o.Window = n
	}
	return o, err
}

func (h *Host) now() time.Time { return h.opts.Now().UTC() }

// has reports whether capability name is switched on.
func (h *Host) has(name string) bool {
	switch name {
	case core.CapCompactionFocus:
		return h.opts.CompactFocus && !h.missing[name] && !h.missing[core.CapCompactCommand]
	case core.CapContextGauge:
		return h.opts.Gauge && !h.missing[name]
	}
	return !h.missing[name]
}

// refuse returns the error for a switched-off capability, or nil.
func (h *Host) refuse(name string) error {
	if h.has(name) {
		return nil
	}
	return fmt.Errorf("fake: %s is switched off: %w", name, core.ErrUnsupported)
}

// Harness returns "fake".
func (h *Host) Harness() string { return Harness }

// Probe reports every capability; it touches nothing.
func (h *Host) Probe(ctx context.Context) core.Probe {
	p := core.Probe{Harness: Harness, Version: "fake 1 (in process)"}
	add := func(name string) {
		c := core.Capability{Name: name, Available: h.has(name)}
		switch {
		case c.Available && name == core.CapNativeResume && h.opts.StateDir == "":
			c.Detail = "sessions kept in memory: resumable by this process only"
		case c.Available && name == core.CapNativeResume:
			c.Detail = "sessions stored in " + h.opts.StateDir
		case c.Available:
		case h.missing[name]:
			c.Detail = "switched off by fake.Options.Missing"
		case name == core.CapCompactionFocus && h.missing[core.CapCompactCommand]:
			c.Detail = "no compaction command (switched off by fake.Options.Missing)"
		case name == core.CapCompactionFocus:
			c.Detail = "the fake compaction command takes no focus (Options.CompactFocus is false)"
		case name == core.CapContextGauge:
			c.Detail = "the fake reports no context usage (Options.Gauge is false)"
		}
		p.Capabilities = append(p.Capabilities, c)
	}
	for _, n := range core.Capabilities {
		add(n)
	}
	return p
}

// ListSessions lists stored sessions that are not archived, newest first;
// a non-empty cwd keeps only that working directory's.
func (h *Host) ListSessions(ctx context.Context, cwd string) ([]core.HostSession, error) {
	if err := h.refuse(core.CapSessionList); err != nil {
		return nil, err
	}
	all, err := h.all()
	if err != nil {
		return nil, err
	}
	out := []core.HostSession{}
	for _, r := range all {
		if r.Archived || (cwd != "" && r.Cwd != cwd) {
			continue
		}
		out = append(out, core.HostSession{NativeID: r.ID, Title: r.Title, Cwd: r.Cwd, UpdatedAt: r.UpdatedAt})
	}
	return out, nil
}

// History returns the stored session's entries, user messages included.
// Entries of a turn still running are stored when the turn ends.
func (h *Host) History(ctx context.Context, nativeID string) ([]core.NewEntry, error) {
	if err := h.refuse(core.CapSessionHistory); err != nil {
		return nil, err
	}
	r, err := h.get(nativeID)
	if err != nil {
		return nil, err
	}
	return r.Entries, nil
}

// HistoryWindow (session.historyWindow; no core interface yet) returns the
// newest stored entries holding at most maxMessages user/assistant
// messages, and whether older entries were left out.
func (h *Host) HistoryWindow(ctx context.Context, nativeID string, maxMessages int) ([]core.NewEntry, bool, error) {
	if err := h.refuse(core.CapHistoryWindow); err != nil {
		return nil, false, err
	}
	r, err := h.get(nativeID)
	if err != nil {
		return nil, false, err
	}
	cut, n := 0, 0
	for i := len(r.Entries) - 1; i >= 0; i-- {
		if r.Entries[i].Kind.IsMessage() {
			if n == maxMessages {
				cut = i + 1
				break
			}
			n++
		}
	}
	return r.Entries[cut:], cut > 0, nil
}

// models is what the fake offers.
var models = []core.Model{
	{ID: "fake-small", Name: "Fake Small", Efforts: []string{"low", "medium", "high"}, ContextWindow: 100000},
	{ID: "fake-large", Name: "Fake Large", Efforts: []string{"low", "medium", "high"}, Vision: true, ContextWindow: 200000},
}

// Models lists fake-small and fake-large (the latter sees images).
func (h *Host) Models(ctx context.Context) ([]core.Model, error) {
	if err := h.refuse(core.CapSessionModels); err != nil {
		return nil, err
	}
	return append([]core.Model(nil), models...), nil
}

// Workspaces lists the working directories of stored sessions.
func (h *Host) Workspaces(ctx context.Context) ([]core.Workspace, error) {
	if err := h.refuse(core.CapWorkspaceList); err != nil {
		return nil, err
	}
	all, err := h.all()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []core.Workspace{}
	for _, r := range all {
		if r.Cwd != "" && !seen[r.Cwd] {
			seen[r.Cwd] = true
			out = append(out, core.Workspace{Path: r.Cwd})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ArchiveSession marks a stored session archived (ListSessions hides it).
func (h *Host) ArchiveSession(ctx context.Context, nativeID string) error {
	if err := h.refuse(core.CapWorkspaceArchive); err != nil {
		return err
	}
	return h.update(nativeID, func(r *record) error { r.Archived = true; return nil })
}

// Presets lists "default" and "readonly".
func (h *Host) Presets(ctx context.Context) ([]core.Preset, error) {
	if err := h.refuse(core.CapPresetList); err != nil {
		return nil, err
	}
	return []core.Preset{
		{Name: "default", Harness: Harness, Description: "every fake tool"},
		{Name: "readonly", Harness: Harness, Description: "fake tools that read only"},
	}, nil
}

// Attachment returns an image block stored with a prompt of session
// nativeID, by the ref its history names.
func (h *Host) Attachment(ctx context.Context, nativeID, ref string) (core.Content, error) {
	if err := h.refuse(core.CapAttachment); err != nil {
		return core.Content{}, err
	}
	r, err := h.get(nativeID)
	if err != nil {
		return core.Content{}, err
	}
	c, ok := r.Attachments[ref]
	if !ok {
		return core.Content{}, core.NotFound("fake attachment", ref)
	}
	return c, nil
}

// Goals returns the goals held for session nativeID (for tests).
func (h *Host) Goals(nativeID string) ([]GoalState, error) {
	r, err := h.get(nativeID)
	if err != nil {
		return nil, err
	}
	return r.Goals, nil
}

// CreateSession starts a new native session.
func (h *Host) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	if err := h.refuse(core.CapSessionCreate); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fake: create session: %w", err)
	}
	model := req.Model
	if model == "" {
		model = req.Preset.Model
	}
	if model == "" {
		model = models[0].ID
	}
	if findModel(model) == nil {
		return nil, core.Errorf(core.CodeInvalid, "fake: unknown model %q", model)
	}
	now := h.now()
	r := &record{header: header{Type: "session", ID: "fake-" + randHex(8), Cwd: req.Cwd, Model: model,
		Effort: req.Effort, Preset: req.Preset.Name, Title: req.Title, CreatedAt: now, UpdatedAt: now}}
	h.mu.Lock()
	for _, line := range h.worker {
		r.Queue = append(r.Queue, queued{Due: 1, Line: line})
	}
	h.worker = nil
	err := h.save(r)
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return h.open(r.ID, req, sink), nil
}

// Resume opens a stored session again. An unknown id fails with a
// *core.ResumeError carrying the harness-like text "no conversation found
// with session ID: <id>"; a known one returns a Live with that NativeID.
func (h *Host) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	if err := h.refuse(core.CapNativeResume); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fake: resume: %w", err)
	}
	if _, err := h.get(req.NativeID); err != nil {
		return nil, &core.ResumeError{NativeText: "no conversation found with session ID: " + req.NativeID, Err: err}
	}
	return h.open(req.NativeID, req.CreateRequest, sink), nil
}

func findModel(id string) *core.Model {
	for i := range models {
		if models[i].ID == id {
			return &models[i]
		}
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
