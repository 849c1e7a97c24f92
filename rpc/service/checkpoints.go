package service

import (
	"context"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
)

// Checkpoints are rpc/service/checkpointer's; the service asks for them
// (session/checkpoint, a compaction's fallback, a downgrade, the
// controller) and lends it the live sessions (checkpointLive).

// DirectChatPreset is the preset name of a direct chat, which never
// auto-compacts.
const DirectChatPreset = checkpointer.DirectChatPreset

// onGauge runs the controller on a context gauge reading, on the
// goroutine that records the session's events, so it decides from what it
// holds (the reading, the queued flag, the last capability probe) and
// reads nothing: where Bridge is the sole owner of the window (a gauge and
// no compaction of the harness's own), a reading at 75% (context_pressure)
// or into the response reserve queues one controller checkpoint, unless
// one is queued already. The queued worker waits for the turn to end and
// decides with the record (no new work, a tool in flight, a fresh probe
// that finds a compaction command: suppressed, logged).
func (s *Service) onGauge(l *live.Session, g core.Gauge) {
	st := checkpoint.State{HasGauge: true, GaugeUsed: g.Used, GaugeSize: g.Size,
		ResponseReserve: s.opts.ResponseReserve, MeaningfulWork: true}
	if p, ok := s.hosts.Cached(l.Host); ok {
		st.OwnCompaction = p.Has(core.CapCompactCommand)
	}
	var reasons []checkpoint.Reason
	for _, r := range []checkpoint.Reason{checkpoint.ReasonContextPressure, checkpoint.ReasonResponseReserve} {
		if checkpoint.Decide(r, st).Fire {
			reasons = append(reasons, r)
		}
	}
	if len(reasons) == 0 {
		return
	}
	if !l.QueueController() {
		return // one is queued already
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer l.ControllerDone()
		ctx, cancel := context.WithTimeout(s.life, 2*s.opts.CheckpointTimeout+10*time.Second)
		defer cancel()
		s.controllerCheckpoint(ctx, l, reasons)
	}()
}

// controllerCheckpoint is the queued work of onGauge: with a fresh probe
// and the latest gauge, the first window reason that still fires gets a
// checkpoint (which waits for the running turn and decides with the
// record).
func (s *Service) controllerCheckpoint(ctx context.Context, l *live.Session, reasons []checkpoint.Reason) {
	sess, err := s.opts.Store.GetSession(ctx, l.ID)
	if err != nil {
		return
	}
	st := s.ckpt.State(ctx, sess, checkpointLive{s, l}, true)
	st.MeaningfulWork = true
	for _, r := range reasons {
		if checkpoint.Decide(r, st).Fire {
			_, _ = s.autoCheckpoint(ctx, l.ID, r)
			return
		}
	}
}

// checkpointLives finds the live sessions for the checkpointer.
type checkpointLives struct{ s *Service }

func (c checkpointLives) Live(sessionID string) checkpointer.Live {
	if l := c.s.liveFor(sessionID); l != nil {
		return checkpointLive{c.s, l}
	}
	return nil
}

// checkpointLive is a live session as the checkpointer sees it.
type checkpointLive struct {
	s *Service
	l *live.Session
}

func (c checkpointLive) Host() core.BridgeHost { return c.l.Host }
func (c checkpointLive) Harness() core.Live    { return c.l.Harness }
func (c checkpointLive) Preset() core.Preset   { return c.l.Preset }
func (c checkpointLive) ApprovalPending() bool { return c.l.ApprovalPending() }
func (c checkpointLive) TryHold() bool         { return c.l.Turn.TryLock() }
func (c checkpointLive) Release()              { c.l.Turn.Unlock() }

func (c checkpointLive) Hold(ctx context.Context) error { return c.l.Turn.LockContext(ctx) }

func (c checkpointLive) Gauge() *core.Gauge { return c.l.Gauge() }

func (c checkpointLive) Ask(ctx context.Context, prompt string) (string, error) {
	return c.s.askLocked(ctx, c.l, prompt)
}

func (c checkpointLive) Append(ctx context.Context, es ...core.NewEntry) ([]core.Entry, error) {
	return c.l.AppendInOrder(ctx, es...)
}

func (c checkpointLive) Commit(fn func() error) error { return c.l.Commit(fn) }

// checkpointNotifier tells the client what a checkpoint did.
type checkpointNotifier struct{ s *Service }

func (n checkpointNotifier) Announce(es ...core.Entry)         { n.s.announce(es...) }
func (n checkpointNotifier) CheckpointSaved(c CheckpointSaved) { n.s.opts.Notifier.CheckpointSaved(c) }
func (n checkpointNotifier) Log(level int, msg string)         { n.s.opts.Notifier.Log(level, msg) }
