package record

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
)

// Reads of a session's branch follow parent links and check each one, on
// both stores alike; the stores read the rows.

// ScanChain is the fast path for a session that has never branched: its
// tree is one chain, so walking back from the entry at fromSeq is reading
// the session's entries by seq, newest first. read reads at most batch of
// them from seq upper down, handing each to visit until visit returns
// false, and returns how many it read. Every link is still checked: each
// entry must be the parent of the one visited before it, the first must be
// firstID when that is set, and the chain must end at a root. fn returns
// false to stop (the stopping entry's link to its parent is checked too).
// ok is false when the rows do not form that chain; the caller then walks
// by parent links (Walker), which names the problem.
func ScanChain(firstID string, fromSeq int64, batch int, read func(upper int64, visit func(core.Entry) bool) (int, error),
	fn func(core.Entry) bool) (ok bool, err error) {
	upper := fromSeq
	var prev *core.Entry
	stopped, done, good := false, false, true
	// step checks and visits one row; done means the scan is over.
	step := func(e core.Entry) bool {
		switch {
		case prev == nil && firstID != "" && e.ID != firstID, prev != nil && prev.ParentID != e.ID:
			done, good = true, false
		case stopped:
			done = true // the stopping entry's parent is where it should be
		default:
			prev, upper = &e, e.Seq-1
			if !fn(e) {
				stopped = true
				done = e.ParentID == ""
			}
		}
		return !done
	}
	for {
		n, err := read(upper, step)
		if err != nil {
			return false, err
		}
		if done {
			return good, nil
		}
		if n < batch {
			// Nothing older: the chain must end at a root.
			if prev == nil {
				return firstID == "", nil
			}
			return prev.ParentID == "", nil
		}
	}
}

// Walker walks a session's tree from an entry towards the root, newest
// first, checking every step: a missing id, an entry of another session or
// an entry seen twice (a cycle) is a CodeCorrupt error.
type Walker struct {
	sessionID string
	read      WalkRead
	seen      map[string]struct{}
}

// WalkRead reads the entries from the one with id from towards the root
// by parent links, at most batch of them; missing is the id where the
// links lead to no entry ("" when they do not).
type WalkRead func(ctx context.Context, from string, batch int) (entries []core.Entry, missing string, err error)

// NewWalker is a Walker of session sessionID reading with read.
func NewWalker(sessionID string, read WalkRead) *Walker {
	return &Walker{sessionID: sessionID, read: read, seen: map[string]struct{}{}}
}

// Walk visits entries from startID back to the root, batch rows per read,
// until fn returns false. isHead says that startID is the session's head
// (for the error message when it does not exist).
func (w *Walker) Walk(ctx context.Context, startID string, isHead bool, batch int, fn func(core.Entry) bool) error {
	next, child := startID, ""
	for next != "" {
		buf, missing, err := w.read(ctx, next, batch)
		if err != nil {
			return err
		}
		for _, e := range buf {
			if e.SessionID != w.sessionID {
				return core.Errorf(core.CodeCorrupt, "session %s: entry %q (parent of %q) belongs to session %s",
					w.sessionID, e.ID, child, e.SessionID)
			}
			if _, dup := w.seen[e.ID]; dup {
				return core.Errorf(core.CodeCorrupt, "session %s: cycle: entry %q is its own ancestor", w.sessionID, e.ID)
			}
			w.seen[e.ID] = struct{}{}
			if !fn(e) {
				return nil
			}
			child, next = e.ID, e.ParentID
		}
		if missing != "" {
			if child == "" && isHead {
				return core.Errorf(core.CodeCorrupt, "session %s: head %q does not exist", w.sessionID, missing)
			}
			if child == "" {
				return core.Errorf(core.CodeCorrupt, "session %s: entry %q does not exist", w.sessionID, missing)
			}
			return core.Errorf(core.CodeCorrupt, "session %s: entry %q has parent %q, which does not exist",
				w.sessionID, child, missing)
		}
		if len(buf) == 0 {
			return nil
		}
	}
	return nil
}

// EntryBefore finds the newest entry of the active branch from headID with
// seq < beforeSeq ("" if none). Seqs grow from parent to child, so it is
// the first such entry walking back from the head.
func (w *Walker) EntryBefore(ctx context.Context, headID string, beforeSeq int64) (string, error) {
	found := ""
	err := w.Walk(ctx, headID, true, 1024, func(e core.Entry) bool {
		if e.Seq < beforeSeq {
			found = e.ID
			return false
		}
		return true
	})
	return found, err
}

// Page collects a page of history walking back from its newest entry:
// entries until max user/assistant messages are in (other kinds ride along
// without counting).
type Page struct {
	max, count int
	entries    []core.Entry
}

// NewPage is a Page of max messages.
func NewPage(max int) *Page { return &Page{max: max, entries: []core.Entry{}} }

// Collect takes the next entry, newest first; it reports whether the page
// wants more.
func (p *Page) Collect(e core.Entry) bool {
	p.entries = append(p.entries, e)
	if e.Kind.IsMessage() {
		p.count++
	}
	return p.count < p.max
}

// Reset empties the page (a walk that failed its checks starts again).
func (p *Page) Reset() { p.entries, p.count = p.entries[:0], 0 }

// Done returns the page oldest first, and whether the branch goes on
// before its first entry.
func (p *Page) Done() ([]core.Entry, bool) {
	hasMore := len(p.entries) > 0 && p.entries[len(p.entries)-1].ParentID != ""
	Reverse(p.entries)
	return p.entries, hasMore
}

// Reverse reverses es in place.
func Reverse(es []core.Entry) {
	for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
		es[i], es[j] = es[j], es[i]
	}
}

// CheckBranches checks the active branch of each session of ids (branch
// reads it) and notes each unsound one (a CodeCorrupt error) in rep; it
// returns those sessions. Any other error stops it.
func CheckBranches(rep *core.IntegrityReport, ids []string, branch func(id string) error) (map[string]bool, error) {
	bad := map[string]bool{}
	for _, id := range ids {
		rep.SessionsChecked++
		if err := branch(id); err != nil {
			if core.ErrorCode(err) != core.CodeCorrupt {
				return bad, err
			}
			rep.Problems = append(rep.Problems, core.IntegrityProblem{SessionID: id, Problem: err.Error()})
			bad[id] = true
		}
	}
	return bad, nil
}

// BadLink is a parent link off the active branch that is missing, crosses
// sessions or does not point to an older entry (every cycle has such a
// link), as the integrity check finds it.
type BadLink struct {
	SessionID, ID, Parent string
	Seq                   int64
	ParentFound           bool // the parent exists
	ParentSession         string
	ParentSeq             int64
}

// Problem names what is wrong with the link.
func (l BadLink) Problem() string {
	switch {
	case !l.ParentFound:
		return fmt.Sprintf("session %s: entry %q has parent %q, which does not exist", l.SessionID, l.ID, l.Parent)
	case l.ParentSession != l.SessionID:
		return fmt.Sprintf("session %s: entry %q has parent %q from session %s", l.SessionID, l.ID, l.Parent, l.ParentSession)
	}
	return fmt.Sprintf("session %s: entry %q (seq %d) has parent %q with seq %d, not older (a cycle or misordered link)",
		l.SessionID, l.ID, l.Seq, l.Parent, l.ParentSeq)
}

// ActiveBranch reads the entries from the root to the head, in order:
// by chain (ScanChain, the fast path of a session that never branched;
// nil when it does not apply) when the rows form one sound chain, else by
// walk (a Walker's), which names any problem.
func ActiveBranch(chain func(fn func(core.Entry) bool) (bool, error), walk func(fn func(core.Entry) bool) error) ([]core.Entry, error) {
	out := []core.Entry{}
	collect := func(e core.Entry) bool {
		out = append(out, e)
		return true
	}
	if chain != nil {
		ok, err := chain(collect)
		if err != nil {
			return nil, err
		}
		if ok {
			Reverse(out)
			return out, nil
		}
		out = out[:0] // not one sound chain: walk it to name the problem
	}
	if err := walk(collect); err != nil {
		return nil, err
	}
	Reverse(out)
	return out, nil
}
