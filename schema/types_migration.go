package schema

import (
	"encoding/json"

	"github.com/bridge-dev/bridge/core"
)

// MigrationPreviewParams folds a session into an editable five-part handoff
// for a clean target session.
type MigrationPreviewParams struct {
	// SessionID is the source session; absent when Source names one.
	SessionID string `json:"sessionId,omitempty"`
	// Target names where the task goes; empty fields keep the source's.
	Target MigrationTarget `json:"target"`
	// SummaryCharBudget bounds the handoff summary (default 2,400).
	SummaryCharBudget int `json:"summaryCharBudget,omitempty" jsonschema:"minimum=0"`
	// Lang is "en" or "zh"; absent means by the source's language.
	Lang string `json:"lang,omitempty" jsonschema:"enum=en,enum=zh"`
	// Source, instead of SessionID, names a session Bridge did not create
	// (it exists only on its harness). Bridge reads the window the fold
	// needs from the harness (session.historyWindow in one read where
	// served, else session.history) and records it as an imported session
	// (a session Bridge already records is folded from its record); the
	// harness's session is not changed.
	Source *MigrationSource `json:"source,omitempty"`
	WorkDoneProgressParams
}

// MigrationSource names a session on a harness by the harness's own id.
type MigrationSource struct {
	// Harness is the harness that holds the session.
	Harness string `json:"harness"`
	// NativeSessionID is the harness's own session id.
	NativeSessionID string `json:"nativeSessionId"`
}

// MigrationTarget names where a migrated task goes.
type MigrationTarget = core.MigrationTarget

// MigrationPreviewResult is a written, editable handoff.
type MigrationPreviewResult struct {
	// PreviewID names the preview for migration/execute.
	PreviewID string `json:"previewId"`
	// Path is the preview file; edit it before executing to correct numbers,
	// paths or decisions.
	Path string `json:"path"`
	// Summary is the whole handoff text.
	Summary string `json:"summary"`
	// Sections are the five parts: Goal; Current state; Key decisions and
	// conventions; Key files; Next step.
	Sections []HandoffSection `json:"sections"`
	// Stats counts what the fold read and kept (messages, characters…).
	Stats map[string]int `json:"stats"`
	// Warnings tell what was dropped or could not be carried.
	Warnings []string `json:"warnings"`
	// SummaryChars is how much of the handoff the summary budget holds: its
	// characters (Unicode code points) with surrounding white space trimmed,
	// not counting the visual evidence and unresolved images sections (from
	// their "## " heading to the next), which have their own budget. An
	// editor shows this count live against SummaryCharBudget.
	SummaryChars int `json:"summaryChars"`
	// SummaryCharBudget is the budget the handoff was written for.
	SummaryCharBudget int `json:"summaryCharBudget"`
	// OverBudget is true when the handoff is still over its budget after
	// the one repair request the summary worker gets. migration/execute
	// refuses an over-budget handoff unless it was edited within the budget
	// or allowOverBudget is given.
	OverBudget bool `json:"overBudget"`
}

// MarshalJSON writes empty lists and maps as [] and {} rather than null.
func (r MigrationPreviewResult) MarshalJSON() ([]byte, error) {
	type plain MigrationPreviewResult
	return json.Marshal(filled(plain(r)))
}

// HandoffSection is one part of the handoff.
type HandoffSection struct {
	// Title is the section heading.
	Title string `json:"title"`
	// Body is the section text.
	Body string `json:"body"`
}

// MigrationExecuteParams runs a previewed migration.
type MigrationExecuteParams struct {
	// PreviewID names the preview.
	PreviewID string `json:"previewId"`
	// Path is the (possibly edited) preview file; absent means the
	// preview's own, read back verbatim.
	Path string `json:"path,omitempty"`
	// Summary is the edited handoff itself, given inline instead of in a
	// file (a WebUI's editor); it is checked exactly as an edited file is
	// (UTF-8 text without NUL bytes, at most 4 MiB, at least one of the five
	// section headings; missing sections only warn). Give path or summary,
	// not both.
	Summary string `json:"summary,omitempty"`
	// Continue lets the target continue after restating; by default it
	// restates and waits.
	Continue bool `json:"continue,omitempty"`
	// Inject says how the handoff reaches the target; absent means by the
	// target's capabilities.
	Inject InjectMode `json:"inject,omitempty"`
	// GoalRounds is the goal's round budget (default 1).
	GoalRounds int `json:"goalRounds,omitempty" jsonschema:"minimum=0"`
	// AllowOverBudget sends a handoff that is over its summary budget
	// (counted as the preview's summaryChars is) as it is; without it such
	// a handoff is refused (invalid, naming allowOverBudget) before
	// anything is created.
	AllowOverBudget bool `json:"allowOverBudget,omitempty"`
	WorkDoneProgressParams
}

// MigrationExecuteResult says what the migration did.
type MigrationExecuteResult struct {
	// TargetSessionID is the clean target session.
	TargetSessionID string `json:"targetSessionId"`
	// ModelTransferred is true when the source's model and effort were
	// copied.
	ModelTransferred bool `json:"modelTransferred"`
	// GoalCreated is true when a goal carries the handoff.
	GoalCreated bool `json:"goalCreated"`
	// GoalPaused is true when that goal was paused before the kickoff.
	GoalPaused bool `json:"goalPaused"`
	// KickoffSent is true when the kickoff prompt was delivered.
	KickoffSent bool `json:"kickoffSent"`
	// Warnings tell what could not be carried.
	Warnings []string `json:"warnings"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r MigrationExecuteResult) MarshalJSON() ([]byte, error) {
	type plain MigrationExecuteResult
	return json.Marshal(filled(plain(r)))
}
