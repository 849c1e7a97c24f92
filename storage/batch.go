package storage

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// maxGroup bounds how many waiting writes one group transaction takes.
const maxGroup = 128

// Request states: a request is taken by the writer or abandoned by its
// caller, never both.
const (
	reqPending int32 = iota
	reqTaken
	reqAbandoned
)

// writeReq is one Writer call waiting for the writer goroutine.
type writeReq struct {
	ctx   context.Context
	run   func(ctx context.Context, w *txWriter) error
	state atomic.Int32
	err   error
	done  chan struct{}
}

// submit hands op to the writer goroutine and waits for its outcome. If ctx
// ends before the writer takes the request, nothing is written and the
// context's error is returned; once taken, the call waits for the commit so
// that its result is never a lie.
func (db *DB) submit(ctx context.Context, op func(ctx context.Context, w *txWriter) error) error {
	if err := ctx.Err(); err != nil {
		return core.E(core.CodeCancelled, "storage: write cancelled", err)
	}
	r := &writeReq{ctx: ctx, run: op, done: make(chan struct{})}
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return errClosed
	}
	// Fast path: nobody is writing or waiting, so there is nothing to
	// group with; commit here and spare two goroutine switches.
	if len(db.reqs) == 0 && db.writeMu.TryLock() {
		r.state.Store(reqTaken)
		db.runLocked([]*writeReq{r})
		db.writeMu.Unlock()
		db.closeMu.RUnlock()
		return r.err
	}
	select {
	case db.reqs <- r:
		db.queued.Add(1)
		db.closeMu.RUnlock()
	case <-ctx.Done():
		db.closeMu.RUnlock()
		return core.E(core.CodeCancelled, "storage: write cancelled", ctx.Err())
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqPending, reqAbandoned) {
			return core.E(core.CodeCancelled, "storage: write cancelled", ctx.Err())
		}
		<-r.done
		return r.err
	}
}

// writer is the single goroutine that commits grouped writes.
func (db *DB) writer() {
	defer close(db.done)
	group := make([]*writeReq, 0, maxGroup)
	for r := range db.reqs {
		group = append(group[:0], r)
	drain:
		for len(group) < maxGroup {
			select {
			case r2, ok := <-db.reqs:
				if !ok {
					break drain
				}
				group = append(group, r2)
			default:
				break drain
			}
		}
		db.runGroup(group)
	}
}

// runGroup commits the requests of group not abandoned by their callers in
// one transaction. With more than one request, each runs inside its own
// savepoint so that a failing call is undone alone.
func (db *DB) runGroup(group []*writeReq) {
	// The lock first: a caller that gives up while another transaction of
	// this process holds it (one waiting out another process's lock, say)
	// is still pending, so its request is abandoned, not written.
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	taken := group[:0:0]
	for _, r := range group {
		if r.state.CompareAndSwap(reqPending, reqTaken) {
			taken = append(taken, r)
		}
	}
	if len(taken) == 0 {
		return
	}
	db.runLocked(taken)
}

// runLocked runs taken (all in state reqTaken) in one transaction and
// closes their done channels. The caller holds writeMu.
func (db *DB) runLocked(taken []*writeReq) {
	db.groups.Add(1)
	db.calls.Add(int64(len(taken)))
	finish := func(err error) {
		for _, r := range taken {
			if r.err == nil {
				r.err = err
			}
			close(r.done)
		}
	}
	bg := context.Background()
	tx, err := db.beginWaiting(bg, func() bool {
		// Callers that gave up while another process held the lock get
		// their cancellation (nothing of theirs was written); the others
		// keep waiting.
		kept := taken[:0]
		for _, r := range taken {
			if err := r.ctx.Err(); err != nil {
				r.err = core.E(core.CodeCancelled, "storage: write cancelled while another process held the database's write lock", err)
				close(r.done)
				continue
			}
			kept = append(kept, r)
		}
		taken = kept
		return len(taken) > 0
	})
	if tx == nil {
		finish(err)
		return
	}
	w := &txWriter{db: db, tx: tx, q: newStmtTx(db, tx)}
	own := db.own.begin(bg, tx)
	ok := 0
	for _, r := range taken {
		// The caller's context is not allowed to interrupt a statement: an
		// interrupted write would roll back the whole group.
		ctx := context.WithoutCancel(r.ctx)
		if len(taken) == 1 {
			r.err = guard(func() error { return r.run(ctx, w) })
		} else {
			r.err = guard(func() error { return db.inSavepoint(ctx, w, r.run) })
		}
		if r.err == nil {
			ok++
		}
	}
	w.gate.Close()
	if ok == 0 {
		_ = tx.Rollback()
		finish(nil)
		return
	}
	own.end(bg, tx)
	db.fire("commit.before")
	if err := tx.Commit(); err != nil {
		own.failed()
		_ = tx.Rollback()
		err = fmt.Errorf("storage: commit: %w", err)
		for _, r := range taken {
			if r.err == nil {
				r.err = err
			}
		}
	}
	db.kickIndex()
	finish(nil)
}

// guard runs fn, turning a panic into an error of fn alone, so that a bug
// in one call can neither leave the write lock held nor leave the other
// calls of its group without an answer.
func guard(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = core.Errorf(core.CodeInternal, "storage: write failed: panic: %.200v", v)
		}
	}()
	return fn()
}

func (db *DB) inSavepoint(ctx context.Context, w *txWriter, run func(context.Context, *txWriter) error) error {
	if _, err := w.tx.ExecContext(ctx, `SAVEPOINT bridge_call`); err != nil {
		return fmt.Errorf("storage: savepoint: %w", err)
	}
	if err := run(ctx, w); err != nil {
		if _, rerr := w.tx.ExecContext(ctx, `ROLLBACK TO bridge_call`); rerr != nil {
			return fmt.Errorf("storage: rollback to savepoint: %w (after %w)", rerr, err)
		}
		if _, rerr := w.tx.ExecContext(ctx, `RELEASE bridge_call`); rerr != nil {
			return fmt.Errorf("storage: release savepoint: %w (after %w)", rerr, err)
		}
		return err
	}
	if _, err := w.tx.ExecContext(ctx, `RELEASE bridge_call`); err != nil {
		return fmt.Errorf("storage: release savepoint: %w", err)
	}
	return nil
}

// CreateSession implements core.Writer; see core.Writer.
func (db *DB) CreateSession(ctx context.Context, s core.Session) (out core.Session, err error) {
	err = db.submit(ctx, func(ctx context.Context, w *txWriter) (err error) {
		out, err = w.createSession(ctx, s)
		return err
	})
	return out, err
}

// PatchSession implements core.Writer; it also moves updated_at forward.
func (db *DB) PatchSession(ctx context.Context, id string, p core.SessionPatch) (out core.Session, err error) {
	err = db.submit(ctx, func(ctx context.Context, w *txWriter) (err error) {
		out, err = w.patchSession(ctx, id, p)
		return err
	})
	return out, err
}

// Append implements core.Writer. Concurrent calls are committed together
// by the writer goroutine; each gets its own result. Invalid entries fail
// the call before anything is written.
func (db *DB) Append(ctx context.Context, sessionID string, entries ...core.NewEntry) (out []core.Entry, err error) {
	if err := record.CheckEntries(entries, db.maxEntry); err != nil {
		return nil, err
	}
	err = db.submit(ctx, func(ctx context.Context, w *txWriter) (err error) {
		out, err = w.appendEntries(ctx, sessionID, "", false, entries)
		return err
	})
	return out, err
}

// AppendTo implements core.Writer. parentID must be an entry of the
// session; "" starts a new root.
func (db *DB) AppendTo(ctx context.Context, sessionID, parentID string, entries ...core.NewEntry) (out []core.Entry, err error) {
	if err := record.CheckEntries(entries, db.maxEntry); err != nil {
		return nil, err
	}
	err = db.submit(ctx, func(ctx context.Context, w *txWriter) (err error) {
		out, err = w.appendEntries(ctx, sessionID, parentID, true, entries)
		return err
	})
	return out, err
}

// MoveHead implements core.Writer. A missing entry is not_found; an entry
// of another session is invalid.
func (db *DB) MoveHead(ctx context.Context, sessionID, entryID string) error {
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		return w.moveHead(ctx, sessionID, entryID)
	})
}

// AppendAudit implements core.Writer.
func (db *DB) AppendAudit(ctx context.Context, r core.AuditRecord) error {
	if err := record.CheckAudit(r); err != nil {
		return err
	}
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		return w.appendAudit(ctx, r)
	})
}
