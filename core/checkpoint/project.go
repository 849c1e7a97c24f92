package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// ErrNoCheckpoint is wrapped (in a core.CodeNotFound error saying why) when
// the active branch holds no valid checkpoint to restore from; the caller
// then reports `fresh` with that reason.
var ErrNoCheckpoint = errors.New("checkpoint: no valid checkpoint on the active branch")

// ProjectOptions shapes a projection.
type ProjectOptions struct {
	// Model and Effort are the session's current model and reasoning
	// effort (from its head); empty ones are taken from the newest
	// model.changed / effort.changed on the branch.
	Model, Effort string
	// Budget cuts the retained entries, keeping the newest; zero keeps all.
	Budget RetainPolicy
}

// ProjectionTokens bounds the retained entries a projection hands a fresh
// process, on restoration and to a fork.
const ProjectionTokens = 32000

// SkippedBoundary is a newer boundary that could not be used.
type SkippedBoundary struct {
	EntryID string `json:"entryId"`
	Problem string `json:"problem"`
}

// Projection is what a fresh harness process is given to continue a
// session: the newest valid checkpoint and the entries retained after it.
type Projection struct {
	// BoundaryEntryID is the `compaction` entry used; CheckpointEntryID the
	// `checkpoint` entry it commits.
	BoundaryEntryID   string     `json:"boundaryEntryId"`
	CheckpointEntryID string     `json:"checkpointEntryId"`
	Checkpoint        Checkpoint `json:"checkpoint"`
	// Retained are the conversation entries from firstRetainedEntryId to
	// the head, bookkeeping entries left out, after the budget cut. It may
	// share memory with the branch passed to Project; treat both as
	// read-only.
	Retained []core.Entry `json:"retained"`
	// Omitted is how many retained entries the budget cut off (oldest).
	Omitted int `json:"omitted,omitempty"`
	// Widened is true when the cut moved earlier to keep a tool pair whole.
	Widened bool `json:"widened,omitempty"`
	// Model and Effort are the current model and reasoning effort.
	Model  string `json:"model,omitempty"`
	Effort string `json:"effort,omitempty"`
	// Skipped lists newer boundaries passed over, newest first.
	Skipped []SkippedBoundary `json:"skipped,omitempty"`
}

// Project builds the restoration projection of branch (root first): the
// newest valid boundary — a `compaction` entry pointing (checkpointEntryId)
// at a `checkpoint` entry on the branch whose payload passes ParsePayload;
// an invalid one is skipped for the one before — then its checkpoint, the
// entries retained after it, and the current model and effort.
//
// The retained entries start at the checkpoint's firstRetainedEntryId: when
// that is the branch.summary marker, after it; when it is an earlier entry
// (a retention plan), at it; when it is not on the branch (the head moved to
// a branch forked at the boundary), right after the boundary. Bookkeeping
// entries are left out, and so are the checkpoint exchanges (see
// conversation). If opt.Budget cuts them, the newest are kept and the
// cut never separates a tool.started from its tool.completed (it moves
// earlier).
//
// With no valid checkpoint the error is a core.CodeNotFound wrapping
// ErrNoCheckpoint, whose message says why.
func Project(branch []core.Entry, opt ProjectOptions) (Projection, error) {
	var p Projection
	b, ci := -1, -1
	for i := len(branch) - 1; i >= 0; i-- {
		if branch[i].Kind != core.KindCompaction {
			continue
		}
		cp, idx, problem := boundaryCheckpoint(branch, i)
		if problem != "" {
			p.Skipped = append(p.Skipped, SkippedBoundary{EntryID: branch[i].ID, Problem: problem})
			continue
		}
		b, ci, p.Checkpoint = i, idx, cp
		break
	}
	if b < 0 {
		why := "the active branch has no checkpoint"
		if len(p.Skipped) > 0 {
			why = fmt.Sprintf("no valid checkpoint on the active branch (newest boundary %s: %s)", p.Skipped[0].EntryID, p.Skipped[0].Problem)
		}
		return Projection{Skipped: p.Skipped}, core.E(core.CodeNotFound, why, ErrNoCheckpoint)
	}
	p.BoundaryEntryID = branch[b].ID
	p.CheckpointEntryID = branch[ci].ID

	start := retainedStart(branch, b, p.Checkpoint.FirstRetainedEntryID)
	p.Retained = conversation(branch[start:])
	retained := p.Retained
	if cut := budgetCut(retained, opt.Budget); cut > 0 {
		if moved := keepToolPairs(retained, 0, cut); moved < cut {
			p.Widened = true
			cut = moved
		}
		p.Omitted = cut
		retained = retained[cut:]
	}
	p.Retained = retained

	p.Model, p.Effort = opt.Model, opt.Effort
	if p.Model == "" || p.Effort == "" {
		m, e := latestModelEffort(branch)
		if p.Model == "" {
			p.Model = m
		}
		if p.Effort == "" {
			p.Effort = e
		}
	}
	return p, nil
}

// boundaryCheckpoint resolves the checkpoint of the boundary at index i, or
// says what is wrong with it.
func boundaryCheckpoint(branch []core.Entry, i int) (Checkpoint, int, string) {
	ref := memberString(branch[i].Payload, "checkpointEntryId")
	if ref == "" {
		return Checkpoint{}, -1, "the boundary names no checkpointEntryId"
	}
	ci := findBack(branch, i-1, ref)
	if ci < 0 {
		return Checkpoint{}, -1, fmt.Sprintf("checkpoint entry %s is not on the active branch before it", ref)
	}
	if branch[ci].Kind != core.KindCheckpoint {
		return Checkpoint{}, -1, fmt.Sprintf("entry %s is a %s, not a checkpoint", ref, branch[ci].Kind)
	}
	cp, err := ParsePayload(branch[ci].Payload)
	if err != nil {
		return Checkpoint{}, -1, fmt.Sprintf("checkpoint entry %s is invalid: %v", ref, err)
	}
	return cp, ci, ""
}

// conversation returns es without bookkeeping entries and without the
// checkpoint exchanges in it: the entries between a compaction.requested
// and the compaction, compaction.failed or repair request that answers it
// (the prompt Bridge sent and the model's JSON reply). The entries between
// a request and a later fresh request (attempt 0) are kept: that request's
// process died and the conversation went on. When nothing is left out, es
// itself is returned (shared, not copied).
func conversation(es []core.Entry) []core.Entry {
	type span struct{ from, to int } // drop es[from:to]
	var drops []span
	n := 0
	open := -1 // index of the request whose exchange may be running
	for i := range es {
		k := es[i].Kind
		if !bookkeepingKind(k) {
			n++
			continue
		}
		switch k {
		case core.KindCompactionRequest:
			if open >= 0 && requestAttempt(es[i].Payload) > 0 {
				drops = append(drops, span{open + 1, i})
			}
			open = i
			if forkRequest(es[i].Payload) {
				open = -1 // asked of a fork: no exchange in the live thread
			}
		case core.KindCompaction, core.KindCompactionFailed:
			if open >= 0 {
				drops = append(drops, span{open + 1, i})
			}
			open = -1
		}
	}
	if n == len(es) {
		return es[:len(es):len(es)]
	}
	out := make([]core.Entry, 0, n)
	d := 0
	for i := range es {
		for d < len(drops) && i >= drops[d].to {
			d++
		}
		if d < len(drops) && i >= drops[d].from {
			continue
		}
		if !bookkeepingKind(es[i].Kind) {
			out = append(out, es[i])
		}
	}
	return out
}

// requestAttempt reads the attempt number of a compaction.requested payload
// (0 when absent or unreadable).
func requestAttempt(raw json.RawMessage) int {
	v, ok := member(raw, "attempt")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0
	}
	return n
}

// retainedStart is the index of the first entry retained after the boundary
// at b.
func retainedStart(branch []core.Entry, b int, first string) int {
	if first == "" {
		return b + 1
	}
	for j := b + 1; j < len(branch); j++ {
		if branch[j].ID == first {
			if branch[j].Kind == core.KindBranchSummary {
				return j + 1
			}
			return j
		}
	}
	if j := findBack(branch, b-1, first); j >= 0 {
		return j
	}
	return b + 1
}

// budgetCut is how many of the oldest entries a budget drops (0: none).
func budgetCut(entries []core.Entry, p RetainPolicy) int {
	if p.KeepMessages <= 0 && p.TokenBudget <= 0 {
		return 0
	}
	var msgs int
	var tokens int64
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if p.KeepMessages > 0 && msgs == p.KeepMessages {
			return i + 1
		}
		t := tokensOf(e)
		if p.TokenBudget > 0 && tokens+t > p.TokenBudget {
			return i + 1
		}
		tokens += t
		if e.Kind.IsMessage() {
			msgs++
		}
	}
	return 0
}

// latestModelEffort returns the newest model.changed model and
// effort.changed effort on branch.
func latestModelEffort(branch []core.Entry) (model, effort string) {
	for i := len(branch) - 1; i >= 0 && (model == "" || effort == ""); i-- {
		switch branch[i].Kind {
		case core.KindModelChanged:
			if model == "" {
				model = memberString(branch[i].Payload, "model")
			}
		case core.KindEffortChanged:
			if effort == "" {
				effort = memberString(branch[i].Payload, "effort")
			}
		}
	}
	return model, effort
}

// Render is the text injected into a fresh harness process: a short
// preamble, then the summary first, decisions, files, open work, the model
// and effort, and the activity after the checkpoint, each under a clear
// heading. Empty sections are left out.
func Render(p Projection) string {
	var b strings.Builder
	c := p.Checkpoint
	b.WriteString("# Restored session\n\n")
	b.WriteString("This session continues earlier work from another process. Bridge saved the checkpoint below")
	switch c.Provenance {
	case ProvenanceReconstructed:
		b.WriteString(" (rebuilt by Bridge from the record after the previous process ended)")
	case ProvenanceAgentController:
		b.WriteString(" (written by the previous agent, completed by Bridge from the record)")
	case ProvenanceAgent:
		b.WriteString(" (written by the previous agent)")
	}
	b.WriteString(". Treat it as your own memory of the session and continue from it; do not redo finished work.\n\n")
	b.WriteString("## Summary\n\n")
	writeCheckpoint(&b, c)
	writeModel(&b, "Model", p)
	writeRetained(&b, "Activity after the checkpoint", p)
	return b.String()
}

// writeCheckpoint writes a checkpoint's summary and its decision, file and
// open-work sections (the summary's heading is the caller's).
func writeCheckpoint(b *strings.Builder, c Checkpoint) {
	b.WriteString(strings.TrimSpace(c.Summary))
	b.WriteString("\n")
	section(b, "Decisions", c.Decisions)
	section(b, "Files touched", c.FilesTouched)
	section(b, "Open work", c.OpenWork)
}

// writeModel writes the projection's model and effort under heading, if
// either is known.
func writeModel(b *strings.Builder, heading string, p Projection) {
	if p.Model == "" && p.Effort == "" {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", heading)
	if p.Model != "" {
		fmt.Fprintf(b, "- model: %s\n", p.Model)
	}
	if p.Effort != "" {
		fmt.Fprintf(b, "- reasoning effort: %s\n", p.Effort)
	}
}

// writeRetained writes the retained entries under heading, one a line,
// after a note of how many earlier ones were omitted; nothing when there
// are none.
func writeRetained(b *strings.Builder, heading string, p Projection) {
	if len(p.Retained) == 0 && p.Omitted == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", heading)
	if p.Omitted > 0 {
		fmt.Fprintf(b, "(%d earlier entries omitted)\n", p.Omitted)
	}
	for _, e := range p.Retained {
		b.WriteString(renderEntry(e))
		b.WriteString("\n")
	}
}

func section(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", title)
	for _, s := range items {
		fmt.Fprintf(b, "- %s\n", oneLine(s))
	}
}

// maxRenderedPayload caps the payload text shown for a non-message entry.
const maxRenderedPayload = 600

// renderEntry renders one retained entry as a line (messages keep their
// full text).
func renderEntry(e core.Entry) string {
	switch e.Kind {
	case core.KindUserMessage:
		return "[user] " + textOf(e.Payload)
	case core.KindAssistantMessage:
		return "[assistant] " + textOf(e.Payload)
	case core.KindToolStarted, core.KindToolCompleted:
		var v struct {
			ToolID string `json:"toolId"`
			Name   string `json:"name"`
		}
		_ = json.Unmarshal(e.Payload, &v)
		verb := "call"
		if e.Kind == core.KindToolCompleted {
			verb = "result"
		}
		name := v.Name
		if name == "" {
			name = "tool"
		}
		return fmt.Sprintf("[%s %s %s] %s", name, verb, v.ToolID, compactPayload(e.Payload, "toolId", "name"))
	}
	return fmt.Sprintf("[%s] %s", e.Kind, compactPayload(e.Payload))
}

// compactPayload renders a payload on one line without the given members,
// cut to maxRenderedPayload bytes.
func compactPayload(raw json.RawMessage, drop ...string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		for _, k := range drop {
			delete(obj, k)
		}
		raw = core.Payload(obj)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	s := buf.String()
	if len(s) > maxRenderedPayload {
		cut := maxRenderedPayload
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }
