package checkpoint

import (
	"errors"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

func TestFindPendingAcrossRestart(t *testing.T) {
	tests := []struct {
		name string
		// build returns the time the current process started.
		build   func(b *branchBuilder) time.Time
		want    LockState
		attempt int
	}{
		{"no request", func(b *branchBuilder) time.Time { b.user("hi"); return b.now }, LockFree, 0},
		{"opened by this process: busy", func(b *branchBuilder) time.Time {
			start := b.now
			b.user("hi")
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.assistant("still typing")
			return start
		}, LockBusy, 0},
		{"opened before a restart: stale", func(b *branchBuilder) time.Time {
			b.user("hi")
			b.add(core.KindCompactionRequest, Request{Reason: ReasonPhaseBoundary})
			return b.now.Add(time.Minute) // the process restarted after it
		}, LockStale, 0},
		{"repair attempt pending", func(b *branchBuilder) time.Time {
			start := b.now
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual, Attempt: 1, RepairOf: "no object"})
			return start
		}, LockBusy, 1},
		{"closed by a compaction", func(b *branchBuilder) time.Time {
			start := b.now
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.commit(validCP("S"), "")
			b.user("more")
			return start
		}, LockFree, 0},
		{"closed by compaction.failed", func(b *branchBuilder) time.Time {
			start := b.now
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.add(core.KindCompactionFailed, map[string]any{"reason": "manual"})
			return start
		}, LockFree, 0},
		{"a new request after a closed one", func(b *branchBuilder) time.Time {
			start := b.now
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.add(core.KindCompactionFailed, map[string]any{"reason": "manual"})
			b.add(core.KindCompactionRequest, Request{Reason: ReasonBeforeSuspend})
			return start
		}, LockBusy, 0},
		{"stale request, then a restart, then a new one: busy", func(b *branchBuilder) time.Time {
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.now = b.now.Add(time.Hour)
			start := b.now
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			return start
		}, LockBusy, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBranch()
			start := tt.build(b)
			l := FindPending(b.entries, start)
			if l.State != tt.want {
				t.Fatalf("state = %s, want %s", l.State, tt.want)
			}
			if l.State != LockFree && (l.Entry.Kind != core.KindCompactionRequest || l.Request.Attempt != tt.attempt) {
				t.Errorf("lock = %+v", l)
			}
			err := l.Err()
			if (err != nil) != (tt.want == LockBusy) {
				t.Fatalf("Err() = %v", err)
			}
			var ce *core.Error
			if err != nil && (!errors.As(err, &ce) || ce.Code != core.CodeBusy) {
				t.Errorf("Err() = %v, want a busy core.Error", err)
			}
		})
	}
}

func TestRequestAndFailedEntriesValidate(t *testing.T) {
	for _, e := range []core.NewEntry{
		RequestEntry(Request{Reason: ReasonManual, TokensBefore: 10, SourceAgent: "s1", FirstRetainedEntryID: "r"}),
		RequestEntry(Request{Reason: ReasonManual, Attempt: 1, RepairOf: "empty summary"}),
		FailedEntry(ReasonManual, 1, ErrNoObject),
	} {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", e.Kind, err)
		}
	}
}
