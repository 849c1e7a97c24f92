package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/schema"
)

// SessionModels lists the models the session's harness offers, with their
// context window where known, and the session's current model and effort.
func (s *Sessions) Models(ctx context.Context, p schema.SessionModelsParams) (schema.SessionModelsResult, error) {
	sess, err := s.Session(ctx, p.SessionID)
	if err != nil {
		return schema.SessionModelsResult{}, err
	}
	h, err := s.opts.Hosts.Get(sess.Harness)
	if err != nil {
		return schema.SessionModelsResult{}, err
	}
	if err := s.opts.Hosts.Require(ctx, h, "session/models", core.CapSessionModels); err != nil {
		return schema.SessionModelsResult{}, err
	}
	ms, err := h.Models(ctx)
	if err != nil {
		return schema.SessionModelsResult{}, core.HarnessFailed(h.Harness(), err)
	}
	out := schema.SessionModelsResult{Models: make([]schema.Model, 0, len(ms)), Model: sess.Model, Effort: sess.Effort}
	for _, m := range ms {
		if m.ContextWindow == 0 {
			m.ContextWindow = windowOf(h, nil, m.ID)
		}
		out.Models = append(out.Models, m)
	}
	return out, nil
}

// windowOf is model's context window as h knows it (0: unknown), from its
// ContextWindower or from the model list ms.
func windowOf(h core.BridgeHost, ms []core.Model, model string) int64 {
	if model == "" {
		return 0
	}
	if cw, ok := h.(core.ContextWindower); ok {
		if w := cw.ContextWindow(model); w > 0 {
			return w
		}
	}
	for _, m := range ms {
		if m.ID == model {
			return m.ContextWindow
		}
	}
	return 0
}

// isDowngrade says whether switching from (model, effort) to (toModel,
// toEffort) lowers the context window or the effort, where both sides are
// known; why says which.
func (s *Sessions) isDowngrade(ctx context.Context, h core.BridgeHost, model, effort, toModel, toEffort string) (bool, string) {
	if toEffort != "" && effort != "" && toEffort != effort {
		from, to := core.EffortRank(effort), core.EffortRank(toEffort)
		if from >= 0 && to >= 0 && to < from {
			return true, fmt.Sprintf("effort %s -> %s", effort, toEffort)
		}
	}
	if toModel == "" || model == "" || toModel == model {
		return false, ""
	}
	var ms []core.Model
	if _, ok := h.(core.ContextWindower); !ok || windowOf(h, nil, model) == 0 || windowOf(h, nil, toModel) == 0 {
		ms, _ = h.Models(ctx) // unknown windows stay unknown
	}
	from, to := windowOf(h, ms, model), windowOf(h, ms, toModel)
	if from > 0 && to > 0 && to < from {
		return true, fmt.Sprintf("context window %d -> %d tokens", from, to)
	}
	return false, ""
}

// SessionSelectModel switches a live session's model and/or effort. A
// downgrade writes a before_downgrade checkpoint first, on the old model,
// through the usual decision (a suppressed one is reported, not an error).
// model.changed / effort.changed record the switch.
func (s *Sessions) SelectModel(ctx context.Context, p schema.SessionSelectModelParams) (schema.SessionSelectModelResult, error) {
	if p.Model == "" && p.Effort == "" {
		return schema.SessionSelectModelResult{}, core.InvalidField("model", "give a model, an effort or both")
	}
	if p.Effort != "" && core.EffortRank(p.Effort) < 0 {
		return schema.SessionSelectModelResult{}, core.InvalidField("effort", "effort %q is not one of %v", p.Effort, core.Efforts)
	}
	sess, err := s.Session(ctx, p.SessionID)
	if err != nil {
		return schema.SessionSelectModelResult{}, err
	}
	if sess.Archived {
		return schema.SessionSelectModelResult{}, core.Errorf(core.CodeInvalid, "session %s is archived", sess.ID)
	}
	h, err := s.opts.Hosts.Get(sess.Harness)
	if err != nil {
		return schema.SessionSelectModelResult{}, err
	}
	// A harness that cannot switch live is refused before anything changes.
	if err := s.opts.Hosts.Require(ctx, h, "session/selectModel", core.CapSessionSelect); err != nil {
		return schema.SessionSelectModelResult{}, err
	}
	out := schema.SessionSelectModelResult{Model: sess.Model, Effort: sess.Effort}
	if (p.Model == "" || p.Model == sess.Model) && (p.Effort == "" || p.Effort == sess.Effort) {
		return out, nil // nothing to switch
	}
	l, err := s.EnsureLive(ctx, sess)
	if err != nil {
		return schema.SessionSelectModelResult{}, err
	}
	down, why := s.isDowngrade(ctx, h, sess.Model, sess.Effort, p.Model, p.Effort)
	out.Downgrade = down
	if down {
		cp, err := s.opts.Checkpoints.Checkpoint(ctx, sess.ID, checkpointer.Request{Reason: checkpoint.ReasonBeforeDowngrade})
		var se *checkpoint.SuppressedError
		switch {
		case err == nil:
			out.CheckpointEntryID = cp.EntryID
		case errors.As(err, &se):
			out.CheckpointNote = se.Err.Message
		default:
			return schema.SessionSelectModelResult{}, fmt.Errorf("before_downgrade checkpoint (%s): %w", why, err)
		}
	}
	if !l.Turn.TryLock() {
		return schema.SessionSelectModelResult{}, core.Errorf(core.CodeBusy, "session %s is running a turn; switch after it ends", sess.ID)
	}
	defer l.Turn.Unlock()
	model, effort := p.Model, p.Effort
	if model == sess.Model {
		model = ""
	}
	if effort == sess.Effort {
		effort = ""
	}
	if err := l.Harness.SelectModel(ctx, model, effort); err != nil {
		if errors.Is(err, core.ErrUnsupported) {
			return schema.SessionSelectModelResult{}, core.E(core.CodeUnavailable, fmt.Sprintf("harness %q cannot switch a live session's model", h.Harness()), err)
		}
		return schema.SessionSelectModelResult{}, core.HarnessFailed(h.Harness(), err)
	}
	var es []core.NewEntry
	patch := core.SessionPatch{}
	if model != "" {
		pl := core.ModelChangedPayload{Model: model, From: sess.Model, Downgrade: down}
		es = append(es, core.NewEntry{Kind: core.KindModelChanged, Payload: core.Payload(pl)})
		patch.Model, out.Model = core.Ptr(model), model
	}
	if effort != "" {
		pl := core.EffortChangedPayload{Effort: effort, From: sess.Effort, Downgrade: down}
		es = append(es, core.NewEntry{Kind: core.KindEffortChanged, Payload: core.Payload(pl)})
		patch.Effort, out.Effort = core.Ptr(effort), effort
	}
	if _, err := s.opts.Store.PatchSession(ctx, sess.ID, patch); err != nil {
		return schema.SessionSelectModelResult{}, err
	}
	if _, err := l.AppendInOrder(ctx, es...); err != nil {
		return schema.SessionSelectModelResult{}, err
	}
	return out, nil
}
