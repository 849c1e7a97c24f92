// Package migrate moves a task to a clean session elsewhere through a
// reviewed handoff (ARCHITECTURE.md, Migration): a preview has a
// temporary summary worker write the five-part handoff into an editable
// file; executing it starts the target, carries the handoff in a paused
// goal and a kickoff, and records the migration. The live sessions it
// starts and prompts are the service's (Sessions); the source is never
// rewritten.
package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/bridge-dev/bridge/rpc/service/attach"
	"github.com/bridge-dev/bridge/rpc/service/hosts"
	"github.com/bridge-dev/bridge/rpc/service/library"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// Sessions is what a migration needs of the live sessions: to start the
// summary worker and the target, to run their turns, and to archive the
// worker.
type Sessions interface {
	// Create starts a live session and records it.
	Create(ctx context.Context, p schema.SessionCreateParams) (core.Session, error)
	// Archive stops a session's harness and hides it from the list.
	Archive(ctx context.Context, sessionID string) error
	// Rename sets a session's title.
	Rename(ctx context.Context, sessionID, title string) error
	// Append appends to a session's record and tells the client.
	Append(ctx context.Context, sessionID string, es ...core.NewEntry) ([]core.Entry, error)
	// Preset finds a preset of h by name (an error names the ones there are).
	Preset(ctx context.Context, h core.BridgeHost, name string) (core.Preset, error)
	// Live is the running harness session of sessionID (false: none runs).
	Live(sessionID string) (core.Live, bool)
	// Hold takes sessionID's turn for the caller (false: a turn is running,
	// or no harness runs); Release gives it back.
	Hold(sessionID string) (Turn, bool)
}

// Turn runs turns in a live session whose turn the caller holds.
type Turn interface {
	// Run runs one turn with content.
	Run(ctx context.Context, content []core.Content) error
	// Ask runs one turn with prompt and returns the assistant text it produced.
	Ask(ctx context.Context, prompt string) (string, error)
	// Release gives the turn back.
	Release()
}

// Recorder records a session read from a harness (the library's import).
type Recorder interface {
	RecordImported(ctx context.Context, harness string, is core.ImportedSession, title, what string) (library.Outcome, error)
}

// Logger is told what failed on the side (the client's window/logMessage).
type Logger interface {
	Log(level int, msg string)
}

// Options configures a Migrator; every field is required.
type Options struct {
	Store    core.Store
	Hosts    *hosts.Table
	Sessions Sessions
	Library  Recorder
	Images   attach.Images
	Log      Logger
	// DataDir holds the previews folder.
	DataDir string
	IDs     *core.IDs
	Now     core.Clock
}

// Migrator previews and executes migrations. It is safe for concurrent use.
type Migrator struct {
	opts Options
}

// New returns a Migrator over opts.
func New(opts Options) *Migrator { return &Migrator{opts: opts} }

// session loads a session's head record.
func (s *Migrator) session(ctx context.Context, id string) (core.Session, error) {
	if id == "" {
		return core.Session{}, core.InvalidField("sessionId", "sessionId is required")
	}
	return s.opts.Store.GetSession(ctx, id)
}

// previewTTL is how long a preview can be executed.
const previewTTL = 30 * time.Minute

// workerTimeout bounds the summary worker's turn.
const workerTimeout = 5 * time.Minute

// previewExtra is what the service keeps with a preview beyond the core
// fields: the unanswered image messages, whose images a vision-capable
// target receives with the kickoff.
type previewExtra struct {
	Unresolved []unresolvedMeta `json:"unresolvedImages,omitempty"`
	// Budget is the summary budget the handoff was written for (0 in a
	// preview made before it was kept: the default).
	Budget int `json:"summaryCharBudget,omitempty"`
}

// unresolvedMeta is an image message nobody answered, as a preview keeps it.
type unresolvedMeta struct {
	EntryID     string            `json:"entryId"`
	Images      int               `json:"images"`
	Attachments []core.Attachment `json:"attachments,omitempty"`
	HostImages  []core.HostImage  `json:"hostImages,omitempty"`
}

// migrationNeeds lists the capabilities a migration needs of the source
// host (for the summary worker) and of the target host.
func migrationNeeds(inject string) (source, target []string) {
	source = []string{core.CapSessionCreate, core.CapSessionPrompt}
	target = []string{core.CapSessionCreate, core.CapSessionPrompt, core.CapSessionRename}
	if inject == "goal" || inject == "both" {
		target = append(target, core.CapGoalCreate, core.CapGoalPause)
	}
	return source, target
}

// resolveInject picks how the handoff travels: "" means goal and prompt
// where the target has goals, else prompt only.
func resolveInject(p core.Probe, inject string) (string, error) {
	switch inject {
	case "goal", "prompt", "both":
		return inject, nil
	case "":
		if p.Has(core.CapGoalCreate) {
			return "both", nil
		}
		return "prompt", nil
	}
	return "", core.InvalidField("inject", "inject must be goal, prompt or both, not %q", inject)
}

// checkMigration refuses, before anything exists, a migration whose source
// or target host lacks a capability the flow needs.
func (s *Migrator) checkMigration(ctx context.Context, src core.Session, t schema.MigrationTarget, inject string) (core.BridgeHost, string, error) {
	sh, err := s.opts.Hosts.Get(src.Harness)
	if err != nil {
		return nil, "", err
	}
	th, err := s.opts.Hosts.Get(t.Harness)
	if err != nil {
		return nil, "", err
	}
	inj, err := resolveInject(s.opts.Hosts.Capabilities(ctx, th), inject)
	if err != nil {
		return nil, "", err
	}
	needS, needT := migrationNeeds(inj)
	if err := s.opts.Hosts.Require(ctx, sh, "migration (summary worker on the source harness)", needS...); err != nil {
		return nil, "", err
	}
	if err := s.opts.Hosts.Require(ctx, th, "migration (target)", needT...); err != nil {
		return nil, "", err
	}
	if t.Preset != "" {
		if _, err := s.opts.Sessions.Preset(ctx, th, t.Preset); err != nil {
			return nil, "", err
		}
	}
	return th, inj, nil
}

// Preview (migration/preview) folds the source, has a temporary summary worker write
// the five-part handoff and writes it to an editable file. The worker is
// always archived; the source and any target are left untouched.
func (s *Migrator) Preview(ctx context.Context, req schema.MigrationPreviewParams) (schema.MigrationPreviewResult, error) {
	src, err := s.sourceSession(ctx, req)
	if err != nil {
		return schema.MigrationPreviewResult{}, err
	}
	t := req.Target
	if t.Harness == "" {
		t.Harness = src.Harness
	}
	if t.Harness == src.Harness && t.Preset == src.Preset && t.Model == "" && t.Effort == "" {
		return schema.MigrationPreviewResult{}, core.Errorf(core.CodeInvalid, "the target is the source's own harness and preset: name another preset, model, effort or harness")
	}
	if req.SummaryCharBudget < 0 {
		return schema.MigrationPreviewResult{}, core.InvalidField("summaryCharBudget", "summaryCharBudget must not be negative")
	}
	if req.Lang != "" && req.Lang != "en" && req.Lang != "zh" {
		return schema.MigrationPreviewResult{}, core.InvalidField("lang", "lang must be en or zh, not %q", req.Lang)
	}
	if _, _, err := s.checkMigration(ctx, src, t, ""); err != nil {
		return schema.MigrationPreviewResult{}, err
	}
	branch, more, err := handoff.ReadWindow(ctx, s.opts.Store, src)
	if err != nil {
		return schema.MigrationPreviewResult{}, err
	}
	progress := peer.ProgressFrom(ctx)
	progress(0, 3, "folding the source session")
	fold := handoff.Fold(branch, handoff.FoldOptions{Lang: req.Lang, MoreBefore: more})
	if strings.TrimSpace(fold.Text) == "" {
		return schema.MigrationPreviewResult{}, core.Errorf(core.CodeInvalid, "session %s has no messages to hand off", src.ID)
	}
	budget := req.SummaryCharBudget
	if budget <= 0 {
		budget = handoff.SummaryCharBudget
	}
	progress(1, 3, "the summary worker is writing the handoff")
	started := time.Now()
	h, requests, err := s.writeHandoff(ctx, src, fold.Lang, handoff.Instruction(fold.Lang, budget)+fold.Text, budget)
	if err != nil {
		return schema.MigrationPreviewResult{}, err
	}
	warnings := append([]string(nil), fold.Dropped...)
	if bad := h.UnsupportedFiles(fold.Text); len(bad) > 0 {
		warnings = append(warnings, fmt.Sprintf("key files not found in the source material (check them): %s", strings.Join(bad, ", ")))
	}
	chars := handoff.SummaryChars(h.Markdown())
	over := chars > budget
	if over {
		warnings = append(warnings, fmt.Sprintf("the handoff is %d characters, over its %d-character budget even after one repair request: edit it within the budget, or execute with allowOverBudget", chars, budget))
	}
	vis := handoff.CollectVisual(branch, 0)
	if w := vis.OmittedWarning(); w != "" {
		warnings = append(warnings, w)
	}
	if len(vis.Unresolved) > 0 {
		warnings = append(warnings, fmt.Sprintf("%d image message(s) were never answered; they are marked unresolved", len(vis.Unresolved)))
	}
	summary := h.Markdown()
	if app := vis.Appendix(fold.Lang); app != "" {
		summary = strings.TrimRight(summary, "\n") + "\n\n" + app
	}
	id := s.opts.IDs.New("p_")
	path, err := s.writePreview(id, summary)
	if err != nil {
		return schema.MigrationPreviewResult{}, err
	}
	extra := previewExtra{Budget: budget}
	for _, b := range vis.Unresolved {
		extra.Unresolved = append(extra.Unresolved, unresolvedMeta{EntryID: b.EntryID, Images: b.Images, Attachments: b.Attachments, HostImages: b.HostImages})
	}
	xb, err := json.Marshal(extra)
	if err != nil {
		return schema.MigrationPreviewResult{}, err
	}
	if err := s.opts.Store.SavePreview(ctx, core.Preview{ID: id, SourceSessionID: src.ID, Target: t,
		Lang: fold.Lang, Path: path, Summary: summary, Extra: xb, CreatedAt: s.opts.Now()}); err != nil {
		return schema.MigrationPreviewResult{}, fmt.Errorf("record the preview: %w", err)
	}
	progress(3, 3, "preview written")
	var secs []schema.HandoffSection
	for _, sec := range h.Sections {
		secs = append(secs, schema.HandoffSection{Title: sec.Title, Body: sec.Body})
	}
	stats := map[string]int{
		"sourceChars": fold.Stats.SourceChars, "messagesRead": fold.Stats.MessagesRead,
		"messagesTotal": fold.Stats.MessagesTotal, "usersUsed": fold.Stats.UsersUsed,
		"usersTotal": fold.Stats.UsersTotal, "summaryChars": runeLen(summary),
		"images": vis.Images, "imagesAnswered": len(vis.Answered), "imagesUnresolved": len(vis.Unresolved),
		"workerMillis": int(time.Since(started).Milliseconds()), "workerRequests": requests,
	}
	return schema.MigrationPreviewResult{PreviewID: id, Path: path, Summary: summary, Sections: secs, Stats: stats, Warnings: warnings,
		SummaryChars: chars, SummaryCharBudget: budget, OverBudget: over}, nil
}

// writeHandoff has a summary worker write the five-part handoff. A handoff
// over budget gets one repair request to the same worker (the same five
// sections within the budget); the repaired one is kept when it is still
// five valid sections and shorter. It returns the handoff and how many
// requests the worker got.
func (s *Migrator) writeHandoff(ctx context.Context, src core.Session, lang, prompt string, budget int) (handoff.Handoff, int, error) {
	var h handoff.Handoff
	requests := 0
	err := s.withWorker(ctx, src, func(ask func(string) (string, error)) error {
		text, err := ask(prompt)
		requests++
		if err != nil {
			return err
		}
		if h, err = handoff.Parse(text); err != nil {
			return core.E(core.CodeSummary, "the summary worker's handoff is not five valid sections", err)
		}
		n := handoff.SummaryChars(h.Markdown())
		if n <= budget {
			return nil
		}
		text, err = ask(handoff.RepairInstruction(lang, n, budget))
		requests++
		if err != nil {
			return fmt.Errorf("the repair request for a %d-character handoff: %w", n, err)
		}
		if r, err := handoff.Parse(text); err == nil && handoff.SummaryChars(r.Markdown()) < n {
			h = r
		}
		return nil
	})
	return h, requests, err
}

// withWorker runs a temporary summary worker on the source's harness: a
// fresh session in the same working directory with the same model, which
// sees only what do asks it (each ask one turn, bounded by workerTimeout).
// It is archived whatever happens.
func (s *Migrator) withWorker(ctx context.Context, src core.Session, do func(ask func(prompt string) (string, error)) error) error {
	w, err := s.opts.Sessions.Create(ctx, schema.SessionCreateParams{Harness: src.Harness, Cwd: src.Cwd, Model: src.Model, Effort: src.Effort,
		Title: core.HandoffWorkerTitle + src.ID})
	if err != nil {
		return fmt.Errorf("start the summary worker: %w", err)
	}
	defer func() {
		if err := s.opts.Sessions.Archive(context.WithoutCancel(ctx), w.ID); err != nil {
			s.opts.Log.Log(2, fmt.Sprintf("archiving summary worker %s: %v", w.ID, err))
		}
	}()
	if _, ok := s.opts.Sessions.Live(w.ID); !ok {
		return core.Errorf(core.CodeHarness, "the summary worker stopped before its turn")
	}
	return do(func(prompt string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, workerTimeout)
		defer cancel()
		t, ok := s.opts.Sessions.Hold(w.ID)
		if !ok {
			return "", fmt.Errorf("summary worker: %w", core.Errorf(core.CodeBusy, "session %s is running a turn", w.ID))
		}
		defer t.Release()
		text, err := t.Ask(ctx, prompt)
		if err != nil {
			return "", fmt.Errorf("summary worker: %w", err)
		}
		return text, nil
	})
}

// writePreview writes the editable preview under the data directory,
// owner-only.
func (s *Migrator) writePreview(id, text string) (string, error) {
	dir := filepath.Join(s.opts.DataDir, "previews")
	if s.opts.DataDir == "" {
		return "", core.Errorf(core.CodeInternal, "no data directory for previews")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", core.E(core.CodePersistence, "create the previews folder", err)
	}
	path := filepath.Join(dir, id+".md")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", core.E(core.CodePersistence, "write the preview", err)
	}
	return path, nil
}

func runeLen(s string) int { return len([]rune(s)) }
