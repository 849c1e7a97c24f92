package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/library"
)

// resume brings a session back and reports honestly how (ARCHITECTURE.md, Restoration):
// hot when its harness process is still running; native when the harness
// resumed and proved its own stored session; checkpoint_restored when a
// fresh process was given the projection of the latest valid checkpoint;
// fresh otherwise, with the reason. A failed native resume is recorded
// before any fallback runs. fresh=true asks for a deliberate fresh start.
func (s *Sessions) Resume(ctx context.Context, sessionID string, fresh bool) (peer.Restored, error) {
	sess, err := s.Session(ctx, sessionID)
	if err != nil {
		return peer.Restored{}, err
	}
	if sess.Archived {
		return peer.Restored{}, core.Errorf(core.CodeInvalid, "session %s is archived", sessionID)
	}
	h, err := s.opts.Hosts.Get(sess.Harness)
	if err != nil {
		return peer.Restored{}, err
	}
	if !fresh {
		if l := s.Live(sessionID); l != nil {
			return s.restored(ctx, peer.Restored{SessionID: sessionID, Mode: core.ModeHot})
		}
	}
	// Before anything is written or started: a session another process
	// drives is refused (live_elsewhere) until its lease lapses.
	if err := s.opts.Leases.Claim(ctx, sessionID); err != nil {
		return peer.Restored{}, err
	}
	if err := s.opts.Hosts.Require(ctx, h, "session/resume", core.CapSessionCreate); err != nil {
		return peer.Restored{}, err
	}
	preset, err := s.Preset(ctx, h, sess.Preset)
	if err != nil {
		return peer.Restored{}, err
	}
	if fresh {
		if _, err := s.StartLive(ctx, h, sess, preset, "", true); err != nil {
			return peer.Restored{}, err
		}
		return s.restored(ctx, peer.Restored{SessionID: sessionID, Mode: core.ModeFresh, Reason: "a fresh start was requested"})
	}

	var nativeErr, reason string
	_, canResume := h.(core.NativeResumer)
	switch {
	case sess.NativeSessionID == "":
		reason = "the harness never reported its own session id"
	case strings.HasPrefix(sess.NativeSessionID, library.ContentIDPrefix):
		reason = "the imported transcript had no readable session id"
	case !canResume || !s.opts.Hosts.Capabilities(ctx, h).Has(core.CapNativeResume):
		reason = fmt.Sprintf("harness %s has no native resume", h.Harness())
	default:
		// Before a risky native attempt, a checkpoint rebuilt from the
		// record, so that a failed native resume falls back to a current
		// projection.
		if sess, err = s.opts.Controller.BeforeNativeResume(ctx, h, sess); err != nil {
			return peer.Restored{}, err
		}
		_, err := s.StartLive(ctx, h, sess, preset, sess.NativeSessionID, true)
		if err == nil {
			return s.restored(ctx, peer.Restored{SessionID: sessionID, Mode: core.ModeNative})
		}
		nativeErr = err.Error()
		var re *core.ResumeError
		if errors.As(err, &re) && re.NativeText != "" {
			nativeErr = re.NativeText
		}
		reason = "native resume failed"
		// Recorded before anything else happens.
		if _, aerr := s.Append(ctx, sessionID, core.NewEntry{Kind: core.KindSessionResumeFail,
			Payload: core.Payload(core.ResumeFailedPayload{Reason: reason, Error: nativeErr, NativeID: sess.NativeSessionID})}); aerr != nil {
			return peer.Restored{}, fmt.Errorf("record failed resume: %w", aerr)
		}
	}

	r, err := s.restoreFromCheckpoint(ctx, h, sess, preset)
	if err != nil {
		return peer.Restored{}, err
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
func (s *Sessions) restored(ctx context.Context, r peer.Restored) (peer.Restored, error) {
	payload := core.SessionRestoredPayload{Mode: r.Mode, Reason: r.Reason, NativeError: r.NativeError,
		CheckpointEntryID: r.CheckpointEntryID}
	restored := core.NewEntry{Kind: core.KindSessionRestored, Payload: core.Payload(payload)}
	var err error
	if l := s.Live(r.SessionID); l != nil {
		_, err = l.AppendInOrder(ctx, restored)
	} else {
		_, err = s.Append(ctx, r.SessionID, restored)
	}
	if err != nil {
		return peer.Restored{}, err
	}
	if _, err := s.opts.Store.PatchSession(ctx, r.SessionID, core.SessionPatch{RestoreMode: core.Ptr(string(r.Mode))}); err != nil {
		return peer.Restored{}, err
	}
	s.opts.Notifier.Restored(r)
	return r, nil
}

// restoreFromCheckpoint starts a fresh harness process for sess and, when
// the active branch holds a valid checkpoint, injects its projection:
// checkpoint_restored. With no valid checkpoint the process starts empty:
// fresh, with the reason.
func (s *Sessions) restoreFromCheckpoint(ctx context.Context, h core.BridgeHost, sess core.Session, preset core.Preset) (peer.Restored, error) {
	proj, perr := s.opts.Checkpoints.Projection(ctx, sess, checkpoint.ProjectOptions{Model: sess.Model, Effort: sess.Effort,
		Budget: checkpoint.RetainPolicy{TokenBudget: checkpoint.ProjectionTokens}})
	if perr != nil && core.ErrorCode(perr) != core.CodeNotFound {
		return peer.Restored{}, perr
	}
	l, err := s.StartLive(ctx, h, sess, preset, "", true)
	if err != nil {
		return peer.Restored{}, err
	}
	if perr != nil {
		return peer.Restored{Mode: core.ModeFresh, Reason: "no valid checkpoint to restore from: " + perr.Error()}, nil
	}
	if !l.Turn.TryLock() {
		return peer.Restored{}, core.Errorf(core.CodeBusy, "session %s is busy", sess.ID)
	}
	defer l.Turn.Unlock()
	if _, err := s.RunTurn(ctx, l, []core.Content{{Type: "text", Text: checkpoint.Render(proj)}}); err != nil {
		return peer.Restored{}, fmt.Errorf("inject the checkpoint projection: %w", err)
	}
	return peer.Restored{Mode: core.ModeCheckpointRestored, CheckpointEntryID: proj.CheckpointEntryID}, nil
}
