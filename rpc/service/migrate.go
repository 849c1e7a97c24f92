package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

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
	return "", invalidField("inject", "inject must be goal, prompt or both, not %q", inject)
}

// checkMigration refuses, before anything exists, a migration whose source
// or target host lacks a capability the flow needs.
func (s *Service) checkMigration(ctx context.Context, src core.Session, t schema.MigrationTarget, inject string) (core.BridgeHost, string, error) {
	sh, err := s.hosts.Get(src.Harness)
	if err != nil {
		return nil, "", err
	}
	th, err := s.hosts.Get(t.Harness)
	if err != nil {
		return nil, "", err
	}
	inj, err := resolveInject(s.hosts.Capabilities(ctx, th), inject)
	if err != nil {
		return nil, "", err
	}
	needS, needT := migrationNeeds(inj)
	if err := s.hosts.Require(ctx, sh, "migration (summary worker on the source harness)", needS...); err != nil {
		return nil, "", err
	}
	if err := s.hosts.Require(ctx, th, "migration (target)", needT...); err != nil {
		return nil, "", err
	}
	if t.Preset != "" {
		if _, err := s.preset(ctx, th, t.Preset); err != nil {
			return nil, "", err
		}
	}
	return th, inj, nil
}

// MigrationPreview folds the source, has a temporary summary worker write
// the five-part handoff and writes it to an editable file. The worker is
// always archived; the source and any target are left untouched.
func (s *Service) MigrationPreview(ctx context.Context, req schema.MigrationPreviewParams) (schema.MigrationPreviewResult, error) {
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
		return schema.MigrationPreviewResult{}, invalidField("summaryCharBudget", "summaryCharBudget must not be negative")
	}
	if req.Lang != "" && req.Lang != "en" && req.Lang != "zh" {
		return schema.MigrationPreviewResult{}, invalidField("lang", "lang must be en or zh, not %q", req.Lang)
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
	if err := s.opts.Store.SavePreview(ctx, core.Preview{ID: id, SourceSessionID: src.ID, Target: core.MigrationTarget(t),
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
func (s *Service) writeHandoff(ctx context.Context, src core.Session, lang, prompt string, budget int) (handoff.Handoff, int, error) {
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
func (s *Service) withWorker(ctx context.Context, src core.Session, do func(ask func(prompt string) (string, error)) error) error {
	w, err := s.create(ctx, schema.SessionCreateParams{Harness: src.Harness, Cwd: src.Cwd, Model: src.Model, Effort: src.Effort,
		Title: core.HandoffWorkerTitle + src.ID})
	if err != nil {
		return fmt.Errorf("start the summary worker: %w", err)
	}
	defer func() {
		if err := s.archive(context.WithoutCancel(ctx), w.ID); err != nil {
			s.opts.Notifier.Log(2, fmt.Sprintf("archiving summary worker %s: %v", w.ID, err))
		}
	}()
	l := s.liveFor(w.ID)
	if l == nil {
		return core.Errorf(core.CodeHarness, "the summary worker stopped before its turn")
	}
	return do(func(prompt string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, workerTimeout)
		defer cancel()
		text, err := s.ask(ctx, l, prompt)
		if err != nil {
			return "", fmt.Errorf("summary worker: %w", err)
		}
		return text, nil
	})
}

// ask runs one turn in l and returns the assistant text it produced.
func (s *Service) ask(ctx context.Context, l *liveSession, prompt string) (string, error) {
	if !l.turn.TryLock() {
		return "", core.Errorf(core.CodeBusy, "session %s is running a turn", l.sessionID)
	}
	defer l.turn.Unlock()
	return s.askLocked(ctx, l, prompt)
}

// askLocked is ask for a caller that already holds l.turn.
func (s *Service) askLocked(ctx context.Context, l *liveSession, prompt string) (string, error) {
	var buf strings.Builder
	l.mu.Lock()
	l.capture = &buf
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.capture = nil
		l.mu.Unlock()
	}()
	if _, err := s.runTurn(ctx, l, []core.Content{{Type: "text", Text: prompt}}); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", core.E(core.CodeTimeout, "no reply in time", err)
		}
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return buf.String(), nil
}

// writePreview writes the editable preview under the data directory,
// owner-only.
func (s *Service) writePreview(id, text string) (string, error) {
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
