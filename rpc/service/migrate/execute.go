package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
	"github.com/bridge-dev/bridge/core/inputfile"
	"github.com/bridge-dev/bridge/schema"
)

// Execute starts a clean target session from a preview (migration/execute):
// it reads the (possibly edited) preview file verbatim, creates the target
// under the chosen harness and preset with the source's model and effort,
// renames it, carries the handoff in a paused goal where the host has
// goals, and sends the kickoff. The source is never rewritten. If pausing
// the goal fails, goal.clear is tried, the target is cancelled and no
// kickoff is sent. A kickoff whose delivery is uncertain is never retried.
func (s *Migrator) Execute(ctx context.Context, req schema.MigrationExecuteParams) (schema.MigrationExecuteResult, error) {
	p, extra, err := s.openPreview(ctx, req.PreviewID)
	if err != nil {
		return schema.MigrationExecuteResult{}, err
	}
	if req.GoalRounds < 0 {
		return schema.MigrationExecuteResult{}, core.InvalidField("goalRounds", "goalRounds must not be negative")
	}
	rounds := req.GoalRounds
	if rounds == 0 {
		rounds = 1
	}
	summary, warnings, err := s.checkedHandoff(ctx, req, p.Path, extra.Budget)
	if err != nil {
		return schema.MigrationExecuteResult{}, err
	}
	src, err := s.session(ctx, p.SourceSessionID)
	if err != nil {
		return schema.MigrationExecuteResult{}, err
	}
	_, inject, err := s.checkMigration(ctx, src, p.Target, string(req.Inject))
	if err != nil {
		return schema.MigrationExecuteResult{}, err
	}
	// Exactly once, however many processes try: one conditional update.
	if err := s.opts.Store.ClaimPreview(ctx, p.ID, s.opts.Now()); err != nil {
		return schema.MigrationExecuteResult{}, err
	}
	target, out, ws, err := s.startTarget(ctx, p, src, summary)
	warnings = append(warnings, ws...)
	if err != nil {
		return out, err
	}
	if inject == "goal" || inject == "both" {
		lv, _ := s.opts.Sessions.Live(target.ID)
		ok, ws := s.goalHandoff(ctx, lv, summary, rounds, &out)
		warnings = append(warnings, ws...)
		if !ok {
			out.Warnings = warnings
			s.auditMigration(ctx, src, target, out)
			return out, nil
		}
	}
	kick := handoff.Kickoff(p.Lang, summary, req.Continue)
	images, ws := s.unresolvedImages(ctx, extra.Unresolved, src)
	warnings = append(warnings, ws...)
	if inject == "prompt" || inject == "both" || !out.GoalCreated {
		if t, ok := s.opts.Sessions.Hold(target.ID); !ok {
			warnings = append(warnings, "the target was busy; no kickoff sent")
		} else {
			w, err := s.kickoff(ctx, t, p.Lang, kick, images)
			t.Release()
			warnings = append(warnings, w...)
			if err != nil {
				warnings = append(warnings, "kickoff delivery is uncertain and is not retried: "+err.Error())
			} else {
				out.KickoffSent = true
			}
		}
	}
	out.Warnings = warnings
	s.auditMigration(ctx, src, target, out)
	return out, nil
}

// openPreview reads a preview that can still be executed: younger than
// previewTTL, not executed yet, its state readable.
func (s *Migrator) openPreview(ctx context.Context, id string) (core.Preview, previewExtra, error) {
	p, err := s.opts.Store.GetPreview(ctx, id)
	if err == nil && s.opts.Now().Sub(p.CreatedAt) > previewTTL {
		err = core.NotFound("preview", id)
	}
	if core.ErrorCode(err) == core.CodeNotFound {
		return core.Preview{}, previewExtra{}, core.Errorf(core.CodeNotFound, "preview %q not found or older than 30 minutes: make a new preview", id)
	}
	if err != nil {
		return core.Preview{}, previewExtra{}, err
	}
	if !p.ExecutedAt.IsZero() {
		return core.Preview{}, previewExtra{}, core.Errorf(core.CodeConflict, "preview %s was already executed", p.ID)
	}
	var extra previewExtra
	if err := json.Unmarshal(p.Extra, &extra); err != nil {
		return core.Preview{}, previewExtra{}, core.E(core.CodeCorrupt, "preview "+p.ID+": its state is unreadable", err)
	}
	return p, extra, nil
}

// checkedHandoff is the handoff to send (handoffText) with the warnings it
// earns: not five sections (sent as written), or over its budget (refused
// unless req.AllowOverBudget).
func (s *Migrator) checkedHandoff(ctx context.Context, req schema.MigrationExecuteParams, previewPath string, budget int) (string, []string, error) {
	summary, err := s.handoffText(ctx, req, previewPath)
	if err != nil {
		return "", nil, err
	}
	var warnings []string
	if _, err := handoff.Parse(summary); err != nil {
		warnings = append(warnings, fmt.Sprintf("the edited handoff does not have the five sections (%v); it is sent as written", err))
	}
	if budget <= 0 {
		budget = handoff.SummaryCharBudget
	}
	if n := handoff.SummaryChars(summary); n > budget {
		if !req.AllowOverBudget {
			return "", nil, handoff.OverBudget(n, budget)
		}
		warnings = append(warnings, fmt.Sprintf("the handoff is sent over its budget (%d characters of %d), as allowOverBudget asked", n, budget))
	}
	return summary, warnings, nil
}

// startTarget creates the target session of a claimed preview (releasing
// the claim when nothing was created), renames it and records the handoff
// in it.
func (s *Migrator) startTarget(ctx context.Context, p core.Preview, src core.Session, summary string) (core.Session, schema.MigrationExecuteResult, []string, error) {
	var warnings []string
	model, effort := s.carryModel(ctx, src, p.Target)
	title := src.Title
	if title == "" {
		title = src.ID
	}
	target, err := s.opts.Sessions.Create(ctx, schema.SessionCreateParams{Harness: p.Target.Harness, Cwd: src.Cwd, Preset: p.Target.Preset,
		Model: model, Effort: effort})
	if err != nil {
		// Nothing was created: the preview can be executed again.
		if rerr := s.opts.Store.ReleasePreview(context.WithoutCancel(ctx), p.ID); rerr != nil {
			s.opts.Log.Log(2, "releasing the preview after a failed execution: "+rerr.Error())
		}
		return core.Session{}, schema.MigrationExecuteResult{}, nil, fmt.Errorf("create the target session: %w", err)
	}
	out := schema.MigrationExecuteResult{TargetSessionID: target.ID}
	if model != "" {
		out.ModelTransferred = true
	} else if src.Model != "" {
		warnings = append(warnings, fmt.Sprintf("source model %q is not carried across harnesses (%s → %s: no shared provider for it); the target uses its default", src.Model, src.Harness, p.Target.Harness))
	}
	if _, ok := s.opts.Sessions.Live(target.ID); !ok {
		return target, out, warnings, core.Errorf(core.CodeHarness, "the target session %s stopped right after it started", target.ID)
	}
	to := p.Target.Preset
	if to == "" {
		to = p.Target.Harness
	}
	if err := s.opts.Sessions.Rename(ctx, target.ID, title+" → "+to); err != nil {
		warnings = append(warnings, "rename the target: "+err.Error())
	}
	if _, err := s.opts.Sessions.Append(ctx, target.ID, core.NewEntry{Kind: core.KindMigrationHandoff, Payload: core.Payload(core.MigrationHandoffPayload{
		SourceSessionID: src.ID, Summary: summary, PreviewID: p.ID, SourceHarness: src.Harness, SourcePreset: src.Preset})}); err != nil {
		return target, out, warnings, err
	}
	return target, out, warnings, nil
}

// carryModel is the model and effort the target starts with, so that no
// host default or summary worker silently replaces the source's route: the
// ones the migration names, else the source's model with its provider,
// mapped to the target harness's name for it (handoff.CarryModel), and
// its effort where the target offers that effort for that model (within
// one harness, always).
func (s *Migrator) carryModel(ctx context.Context, src core.Session, t core.MigrationTarget) (model, effort string) {
	model, effort = t.Model, t.Effort
	if model != "" || t.Harness == src.Harness {
		if model == "" {
			model = src.Model
		}
		if effort == "" && t.Harness == src.Harness {
			effort = src.Effort
		}
		return model, effort
	}
	mapped, ok := handoff.CarryModel(src.Harness, t.Harness, src.Model)
	if !ok {
		return "", effort
	}
	// Across harnesses the mapped model must be one the target lists (when
	// it answers), and the effort one it offers for that model.
	h, err := s.opts.Hosts.Get(t.Harness)
	if err != nil {
		return "", effort
	}
	models, err := h.Models(ctx)
	if err != nil {
		return mapped, effort
	}
	for _, m := range models {
		if m.ID == mapped {
			if effort == "" && slices.Contains(m.Efforts, src.Effort) {
				effort = src.Effort
			}
			return mapped, effort
		}
	}
	return "", effort
}

// goalHandoff creates a goal carrying the handoff and pauses it. If pausing
// fails it tries to clear the goal, cancels the target and reports false:
// no kickoff may be sent.
func (s *Migrator) goalHandoff(ctx context.Context, lv core.Live, summary string, rounds int, out *schema.MigrationExecuteResult) (bool, []string) {
	var warnings []string
	gh, ok := lv.(core.GoalHost)
	if !ok {
		return true, []string{"the target has no goals; the handoff travels in the kickoff"}
	}
	goalID, err := gh.CreateGoal(ctx, core.Goal{Text: summary, Rounds: rounds})
	if err != nil {
		return true, []string{"goal.create failed; the handoff travels in the kickoff: " + err.Error()}
	}
	out.GoalCreated = true
	if err := gh.PauseGoal(ctx, goalID); err != nil {
		warnings = append(warnings, "goal.pause failed, so no kickoff was sent: "+err.Error())
		if gc, ok := lv.(core.GoalClearer); ok {
			if cerr := gc.ClearGoal(ctx, goalID); cerr != nil {
				warnings = append(warnings, "goal.clear failed too: "+cerr.Error())
			} else {
				warnings = append(warnings, "the goal was cleared")
			}
		} else {
			warnings = append(warnings, "the target cannot clear goals (goal.clear missing)")
		}
		if cerr := lv.Cancel(ctx); cerr != nil && !errors.Is(cerr, core.ErrUnsupported) {
			warnings = append(warnings, "cancelling the target failed: "+cerr.Error())
		} else {
			warnings = append(warnings, "the target was cancelled")
		}
		return false, warnings
	}
	out.GoalPaused = true
	return true, warnings
}

func (s *Migrator) auditMigration(ctx context.Context, src, target core.Session, out schema.MigrationExecuteResult) {
	err := s.opts.Store.AppendAudit(ctx, core.AuditRecord{Source: "migration", Kind: "migration.executed", Entity: src.ID,
		Body: core.Payload(migrationExecuted{SourceSessionID: src.ID, TargetSessionID: target.ID, TargetHarness: target.Harness,
			TargetPreset: target.Preset, ModelTransferred: out.ModelTransferred, GoalCreated: out.GoalCreated,
			GoalPaused: out.GoalPaused, KickoffSent: out.KickoffSent, Warnings: out.Warnings})})
	if err != nil {
		s.opts.Log.Log(2, "recording the migration in the audit log failed: "+err.Error())
	}
}

// unresolvedImages recovers the images of the source's unanswered image
// messages for a vision-capable target: those Bridge kept from the
// prompts, else those the source's harness kept (its session.attachment,
// for a session Bridge did not create). Otherwise it says why the target
// gets the text handoff only.
func (s *Migrator) unresolvedImages(ctx context.Context, unresolved []unresolvedMeta, source core.Session) ([]core.Content, []string) {
	if len(unresolved) == 0 {
		return nil, nil
	}
	var atts []core.Attachment
	var refs []core.HostImage
	images := 0
	for _, b := range unresolved {
		if len(b.Attachments) > 0 {
			atts = append(atts, b.Attachments...)
		} else {
			refs = append(refs, b.HostImages...)
		}
		images += b.Images
	}
	n := len(unresolved)
	var from core.AttachmentSource
	if len(refs) > 0 && source.NativeSessionID != "" {
		if h, err := s.opts.Hosts.Get(source.Harness); err == nil && s.opts.Hosts.Capabilities(ctx, h).Has(core.CapAttachment) {
			from, _ = h.(core.AttachmentSource)
		}
	}
	if from == nil {
		refs = nil
	}
	if len(atts) == 0 && len(refs) == 0 {
		return nil, []string{fmt.Sprintf("%d unresolved image message(s) (%d image(s)) were kept neither by Bridge nor by a harness it can read them from: the target gets the text handoff only", n, images)}
	}
	var out []core.Content
	var warnings []string
	for _, a := range atts {
		c, err := s.opts.Images.Load(ctx, a)
		if err != nil {
			warnings = append(warnings, "an unresolved image could not be recovered: "+err.Error())
			continue
		}
		out = append(out, c)
	}
	fromHost := 0
	for _, r := range refs {
		c, err := from.Attachment(ctx, source.NativeSessionID, r.Ref)
		if err == nil && (c.Type != "image" || c.Data == "" || c.MediaType == "") {
			err = core.Errorf(core.CodeHarness, "%s returned no image data for %s", source.Harness, r.Ref)
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("an unresolved image could not be recovered from %s: %v", source.Harness, err))
			continue
		}
		out = append(out, c)
		fromHost++
	}
	if fromHost > 0 {
		warnings = append(warnings, fmt.Sprintf("%d unresolved image(s) recovered from %s's session.attachment", fromHost, source.Harness))
	}
	return out, warnings
}

// kickoff sends the kickoff with the unresolved images. Whether the target
// reads images is its own answer: a target that refuses them at admission
// (core.ErrImagesRefused: nothing reached its model) gets the text handoff
// instead, with an explicit unresolved warning. Any other failure is
// returned and not retried.
func (s *Migrator) kickoff(ctx context.Context, t Turn, lang, kick string, images []core.Content) ([]string, error) {
	content := append(append([]core.Content(nil), images...), core.Content{Type: "text", Text: kick})
	err := t.Run(ctx, content)
	if len(images) == 0 {
		return nil, err
	}
	if err == nil {
		return []string{fmt.Sprintf("%d unresolved image(s) sent with the kickoff; the target accepted them", len(images))}, nil
	}
	if !errors.Is(err, core.ErrImagesRefused) {
		return nil, err
	}
	w := fmt.Sprintf("the target refused the %d unresolved image(s) at admission (%v); the text handoff was sent with an explicit unresolved warning", len(images), err)
	err = t.Run(ctx, []core.Content{{Type: "text", Text: kick + "\n\n" + handoff.UnresolvedNote(lang, len(images))}})
	return []string{w}, err
}

// MaxHandoffBytes bounds an edited handoff file read by migration/execute
// (it becomes the kickoff prompt, one entry of the record).
const MaxHandoffBytes = 4 << 20

// handoffText is the handoff migration/execute sends: req.Summary when
// given, else the file req.Path, else the preview's own file (previewPath).
// Inline text and a file are checked the same way.
func (s *Migrator) handoffText(ctx context.Context, req schema.MigrationExecuteParams, previewPath string) (string, error) {
	if req.Summary != "" {
		if req.Path != "" {
			return "", core.InvalidField("summary", "give path or summary, not both")
		}
		if len(req.Summary) > MaxHandoffBytes {
			return "", core.Errorf(core.CodeInvalid, "summary is %d bytes, more than the %d bytes a handoff may have", len(req.Summary), MaxHandoffBytes)
		}
		return req.Summary, checkHandoffText("summary", req.Summary)
	}
	path := req.Path
	if path == "" {
		path = previewPath
	}
	b, err := inputfile.ReadFile(ctx, path, "handoff file", MaxHandoffBytes)
	if err != nil {
		return "", err
	}
	return string(b), checkHandoffText("handoff file "+core.Quote(path), string(b))
}

// checkHandoffText refuses text (what names it: the file, or "summary")
// that is not an edited handoff: empty, not UTF-8, holding NUL bytes, or
// with none of the five section headings. A handoff missing some sections
// is still sent (with a warning).
func checkHandoffText(what, text string) error {
	if strings.TrimSpace(text) == "" {
		return core.Errorf(core.CodeInvalid, "%s is empty", what)
	}
	if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
		return core.Errorf(core.CodeInvalid, "%s is not UTF-8 text", what)
	}
	_, secs := handoff.SplitSections(text)
	for _, sec := range secs {
		if handoff.IsSectionTitle(sec.Title) {
			return nil
		}
	}
	return core.Errorf(core.CodeInvalid, "%s is not a handoff: it has none of the sections (## Goal, ## Current state, …)", what)
}

// migrationExecuted is a migration.executed audit record's body. Members
// are in name order.
type migrationExecuted struct {
	GoalCreated      bool     `json:"goalCreated"`
	GoalPaused       bool     `json:"goalPaused"`
	KickoffSent      bool     `json:"kickoffSent"`
	ModelTransferred bool     `json:"modelTransferred"`
	SourceSessionID  string   `json:"sourceSessionId"`
	TargetHarness    string   `json:"targetHarness"`
	TargetPreset     string   `json:"targetPreset"`
	TargetSessionID  string   `json:"targetSessionId"`
	Warnings         []string `json:"warnings"`
}
