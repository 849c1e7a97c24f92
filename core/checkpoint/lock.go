package checkpoint

import (
	"encoding/json"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// LockState is the state of the checkpoint lock on a session.
type LockState string

// Lock states.
const (
	// LockFree: no request is pending.
	LockFree LockState = "free"
	// LockBusy: a request opened by this process is pending; a new
	// checkpoint or compaction must be refused with core.CodeBusy.
	LockBusy LockState = "busy"
	// LockStale: a request is pending but was opened before this process
	// started; its process died, so it does not block. The caller may close
	// it (FailedEntry) or recover it (Reconstruct).
	LockStale LockState = "stale"
)

// Lock is the pending checkpoint request of a session, if any.
type Lock struct {
	State LockState `json:"state"`
	// Entry is the pending `compaction.requested` entry (zero when free).
	Entry core.Entry `json:"entry"`
	// Request is its decoded payload (zero when free or unreadable).
	Request Request `json:"request"`
}

// Err returns a core.CodeBusy error when the lock is busy, else nil.
func (l Lock) Err() error {
	if l.State != LockBusy {
		return nil
	}
	return &core.Error{Code: core.CodeBusy, Message: "a checkpoint request is already pending"}
}

// FindPending finds the pending request on branch (root first): the newest
// `compaction.requested` with no later `compaction` or `compaction.failed`.
// A pending request created at or after processStart is busy; one created
// before it was left by a process that died, and is stale.
func FindPending(branch []core.Entry, processStart time.Time) Lock {
	for i := len(branch) - 1; i >= 0; i-- {
		switch branch[i].Kind {
		case core.KindCompaction, core.KindCompactionFailed:
			return Lock{State: LockFree}
		case core.KindCompactionRequest:
			return pendingLock(&branch[i], processStart)
		}
	}
	return Lock{State: LockFree}
}

// pendingLock is the lock a pending request entry (nil: none) holds.
func pendingLock(e *core.Entry, processStart time.Time) Lock {
	if e == nil {
		return Lock{State: LockFree}
	}
	l := Lock{State: LockBusy, Entry: *e}
	_ = json.Unmarshal(e.Payload, &l.Request) // an unreadable payload still holds the lock
	if e.CreatedAt.Before(processStart) {
		l.State = LockStale
	}
	return l
}
