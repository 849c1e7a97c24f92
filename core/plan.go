package core

import (
	"encoding/json"
	"strings"
)

// Plan step statuses, as Bridge records them (harness spellings such as
// Codex's "inProgress" are normalised by NormalizePlanStatus).
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanCompleted  = "completed"
	PlanCancelled  = "cancelled"
)

// PlanStep is one step of a harness's plan (todo list).
type PlanStep struct {
	// ID is the harness's id of the step, when it has one.
	ID string `json:"id,omitempty"`
	// Text says what the step is ("" in a partial update that only
	// changes a status).
	Text string `json:"text,omitempty"`
	// Status is pending, in_progress, completed or cancelled.
	Status string `json:"status"`
}

// Plan is the payload of a `plan.updated` entry: the harness's plan as it
// now stands, or (Partial) the steps one update created or changed (Claude
// Code's TaskCreate / TaskUpdate tools).
type Plan struct {
	Steps []PlanStep `json:"steps"`
	// Source names what reported it ("TodoWrite", "turn/plan/updated"…).
	Source string `json:"source,omitempty"`
	// Partial: Steps are only the steps this update touched.
	Partial bool `json:"partial,omitempty"`
}

// Entry is the plan.updated entry carrying p.
func (p Plan) Entry(nativeID string) NewEntry {
	if p.Steps == nil {
		p.Steps = []PlanStep{}
	}
	return NewEntry{Kind: KindPlanUpdated, Payload: Payload(p), NativeID: nativeID}
}

// ParsePlan reads a plan.updated payload; ok is false when it is not one.
func ParsePlan(raw json.RawMessage) (p Plan, ok bool) {
	if json.Unmarshal(raw, &p) != nil {
		return Plan{}, false
	}
	for i := range p.Steps {
		p.Steps[i].Status = NormalizePlanStatus(p.Steps[i].Status)
	}
	return p, true
}

// NormalizePlanStatus maps a harness's spelling of a step status to
// Bridge's: "inProgress" and "in-progress" are in_progress, "done" is
// completed, "deleted" is cancelled; others are kept, lower-cased.
func NormalizePlanStatus(s string) string {
	switch strings.ToLower(strings.ReplaceAll(s, "-", "_")) {
	case "inprogress", "in_progress", "active":
		return PlanInProgress
	case "completed", "complete", "done":
		return PlanCompleted
	case "cancelled", "canceled", "deleted":
		return PlanCancelled
	case "pending", "":
		return PlanPending
	}
	return strings.ToLower(s)
}

// PlanTracker follows a session's plan across plan.updated entries and
// counts the steps that became completed.
type PlanTracker struct {
	status map[string]string // step key -> status
}

// key names a step: its id, else its text.
func (PlanTracker) key(s PlanStep) string {
	if s.ID != "" {
		return "id:" + s.ID
	}
	return "text:" + strings.TrimSpace(s.Text)
}

// Apply takes in one plan update and returns how many steps it completed:
// steps now completed that were not completed before. A full plan replaces
// the known one; a partial update changes only its steps.
func (t *PlanTracker) Apply(p Plan) int {
	next := make(map[string]string, len(p.Steps))
	if p.Partial {
		for k, v := range t.status {
			next[k] = v
		}
	}
	completed := 0
	for _, s := range p.Steps {
		k := t.key(s)
		st := NormalizePlanStatus(s.Status)
		if st == PlanCompleted && t.status[k] != PlanCompleted {
			completed++
		}
		next[k] = st
	}
	t.status = next
	return completed
}
