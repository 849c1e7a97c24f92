package service

import (
	"context"
	"errors"
	"fmt"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/library"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// resume brings a session back and reports honestly how (ARCHITECTURE.md, Restoration):
// hot when its harness process is still running; native when the harness
// resumed and proved its own stored session; checkpoint_restored when a
// fresh process was given the projection of the latest valid checkpoint;
// fresh otherwise, with the reason. A failed native resume is recorded
// before any fallback runs. fresh=true asks for a deliberate fresh start.
func (s *Service) resume(ctx context.Context, sessionID string, fresh bool) (Restored, error) {
	sess, err := s.session(ctx, sessionID)
	if err != nil {
		return Restored{}, err
	}
	if sess.Archived {
		return Restored{}, core.Errorf(core.CodeInvalid, "session %s is archived", sessionID)
	}
	h, err := s.hosts.Get(sess.Harness)
	if err != nil {
		return Restored{}, err
	}
	if !fresh {
		if l := s.liveFor(sessionID); l != nil {
			return s.restored(ctx, Restored{SessionID: sessionID, Mode: core.ModeHot})
		}
	}
	// Before anything is written or started: a session another process
	// drives is refused (live_elsewhere) until its lease lapses.
	if err := s.leases.Claim(ctx, sessionID); err != nil {
		return Restored{}, err
	}
	if err := s.hosts.Require(ctx, h, "session/resume", core.CapSessionCreate); err != nil {
		return Restored{}, err
	}
	preset, err := s.preset(ctx, h, sess.Preset)
	if err != nil {
		return Restored{}, err
	}
	if fresh {
		if _, err := s.startLive(ctx, h, sess, preset, "", true); err != nil {
			return Restored{}, err
		}
		return s.restored(ctx, Restored{SessionID: sessionID, Mode: core.ModeFresh, Reason: "a fresh start was requested"})
	}

	var nativeErr, reason string
	_, canResume := h.(core.NativeResumer)
	switch {
	case sess.NativeSessionID == "":
		reason = "the harness never reported its own session id"
	case strings.HasPrefix(sess.NativeSessionID, library.ContentIDPrefix):
		reason = "the imported transcript had no readable session id"
	case !canResume || !s.hosts.Capabilities(ctx, h).Has(core.CapNativeResume):
		reason = fmt.Sprintf("harness %s has no native resume", h.Harness())
	default:
		// Before a risky native attempt, a checkpoint rebuilt from the
		// record, so that a failed native resume falls back to a current
		// projection.
		if why := s.riskyResume(ctx, h, sess); why != "" {
			s.opts.Notifier.Log(3, fmt.Sprintf("session %s: native resume is risky (%s)", sessionID, why))
			if _, err := s.autoCheckpoint(ctx, sessionID, checkpoint.ReasonBeforeNativeResume); err != nil && checkpointer.Suppressed(err) == "" {
				return Restored{}, err
			}
			if sess, err = s.session(ctx, sessionID); err != nil {
				return Restored{}, err
			}
		}
		_, err := s.startLive(ctx, h, sess, preset, sess.NativeSessionID, true)
		if err == nil {
			return s.restored(ctx, Restored{SessionID: sessionID, Mode: core.ModeNative})
		}
		nativeErr = err.Error()
		var re *core.ResumeError
		if errors.As(err, &re) && re.NativeText != "" {
			nativeErr = re.NativeText
		}
		reason = "native resume failed"
		// Recorded before anything else happens.
		if _, aerr := s.appendEntries(ctx, sessionID, core.NewEntry{Kind: core.KindSessionResumeFail,
			Payload: core.Payload(core.ResumeFailedPayload{Reason: reason, Error: nativeErr, NativeID: sess.NativeSessionID})}); aerr != nil {
			return Restored{}, fmt.Errorf("record failed resume: %w", aerr)
		}
	}

	r, err := s.restoreFromCheckpoint(ctx, h, sess, preset)
	if err != nil {
		return Restored{}, err
	}
	r.SessionID = sessionID
	r.NativeError = nativeErr
	if r.Mode == core.ModeFresh {
		r.Reason = reason + "; " + r.Reason
	} else if r.Reason == "" {
		r.Reason = reason
	}
	return s.restored(ctx, r)
}

// restored records the outcome, updates the head and tells the client.
func (s *Service) restored(ctx context.Context, r Restored) (Restored, error) {
	payload := core.SessionRestoredPayload{Mode: string(r.Mode), Reason: r.Reason, NativeError: r.NativeError,
		CheckpointEntryID: r.CheckpointEntryID}
	restored := core.NewEntry{Kind: core.KindSessionRestored, Payload: core.Payload(payload)}
	var err error
	if l := s.liveFor(r.SessionID); l != nil {
		_, err = l.AppendInOrder(ctx, restored)
	} else {
		_, err = s.appendEntries(ctx, r.SessionID, restored)
	}
	if err != nil {
		return Restored{}, err
	}
	if _, err := s.opts.Store.PatchSession(ctx, r.SessionID, core.SessionPatch{RestoreMode: core.Ptr(string(r.Mode))}); err != nil {
		return Restored{}, err
	}
	s.opts.Notifier.Restored(r)
	return r, nil
}

// restoreFromCheckpoint starts a fresh harness process for sess and, when
// the active branch holds a valid checkpoint, injects its projection:
// checkpoint_restored. With no valid checkpoint the process starts empty:
// fresh, with the reason.
func (s *Service) restoreFromCheckpoint(ctx context.Context, h core.BridgeHost, sess core.Session, preset core.Preset) (Restored, error) {
	proj, perr := s.ckpt.Projection(ctx, sess, checkpoint.ProjectOptions{Model: sess.Model, Effort: sess.Effort,
		Budget: checkpoint.RetainPolicy{TokenBudget: checkpoint.ProjectionTokens}})
	if perr != nil && core.ErrorCode(perr) != core.CodeNotFound {
		return Restored{}, perr
	}
	l, err := s.startLive(ctx, h, sess, preset, "", true)
	if err != nil {
		return Restored{}, err
	}
	if perr != nil {
		return Restored{Mode: core.ModeFresh, Reason: "no valid checkpoint to restore from: " + perr.Error()}, nil
	}
	if !l.Turn.TryLock() {
		return Restored{}, core.Errorf(core.CodeBusy, "session %s is busy", sess.ID)
	}
	defer l.Turn.Unlock()
	if _, err := s.runTurn(ctx, l, []core.Content{{Type: "text", Text: checkpoint.Render(proj)}}); err != nil {
		return Restored{}, fmt.Errorf("inject the checkpoint projection: %w", err)
	}
	return Restored{Mode: core.ModeCheckpointRestored, CheckpointEntryID: proj.CheckpointEntryID}, nil
}
