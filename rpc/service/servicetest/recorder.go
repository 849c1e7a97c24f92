// Package servicetest holds what tests of rpc/service and of the adapters
// that run under it share: a Notifier that records what the client is told,
// and BenchEventToUpdate, the per-event path from an adapter through the
// service into a real SQLite record.
package servicetest

import (
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
)

// Recorder is a service.Notifier that keeps everything it is told. Read
// the fields after the operation that fills them, or inside Await.
type Recorder struct {
	mu       sync.Mutex
	Entries  []core.Entry
	Compacts []service.ContextCompacted
	Saved    []service.CheckpointSaved
	Restores []service.Restored
	Logs     []string
	changed  chan struct{}
}

var _ service.Notifier = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{changed: make(chan struct{}, 1)} }

func (r *Recorder) add(f func()) {
	r.mu.Lock()
	f()
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// EntryAppended records a session/update.
func (r *Recorder) EntryAppended(e core.Entry) { r.add(func() { r.Entries = append(r.Entries, e) }) }

// ContextCompacted records a session/contextCompacted.
func (r *Recorder) ContextCompacted(n service.ContextCompacted) {
	r.add(func() { r.Compacts = append(r.Compacts, n) })
}

// CheckpointSaved records a session/checkpointSaved.
func (r *Recorder) CheckpointSaved(n service.CheckpointSaved) {
	r.add(func() { r.Saved = append(r.Saved, n) })
}

// Restored records a session/restored.
func (r *Recorder) Restored(n service.Restored) { r.add(func() { r.Restores = append(r.Restores, n) }) }

// Log records a window/logMessage.
func (r *Recorder) Log(level int, msg string) { r.add(func() { r.Logs = append(r.Logs, msg) }) }

// Await waits until cond, called with the recorder locked, holds; it fails
// the test after 20 seconds.
func (r *Recorder) Await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Lock holds the recorder still while a test reads several fields.
func (r *Recorder) Lock() { r.mu.Lock() }

// Unlock releases Lock.
func (r *Recorder) Unlock() { r.mu.Unlock() }
