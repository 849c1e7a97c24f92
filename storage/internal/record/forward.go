package record

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// Forward pages read the active branch from an entry towards the head, as
// History reads it from the head back. Both stores read them the same way:
// a session that never branched by its entries' seqs upwards (ScanForward),
// any other by windows of seqs, each walked back by parent links from the
// newest branch entry below its top (ForwardWindows): the branch is only
// ever known walking back from the head.

// ScanForward is the fast path of a session that has never branched: its
// active branch is its entries with seq 1..headSeq, one chain, so the page
// after afterSeq is read by seq, oldest first. read reads at most batch
// entries with seq >= lower (and <= headSeq), oldest first, handing each to
// visit until visit returns false, and returns how many it read. Every link
// is checked: the entry at afterSeq comes first (when afterSeq > 0; it is
// not visited) or the first entry is a root, and each entry is the child of
// the one before it. fn returns false to stop. ok is false when the rows do
// not form that chain; the caller then reads by ForwardWindows, whose walk
// names the problem.
func ScanForward(afterSeq, headSeq int64, batch int, read func(lower int64, visit func(core.Entry) bool) (int, error),
	fn func(core.Entry) bool) (ok bool, err error) {
	if afterSeq >= headSeq {
		return true, nil
	}
	lower := max(afterSeq, 1)
	var prev *core.Entry
	done, good := false, true
	step := func(e core.Entry) bool {
		switch {
		case prev == nil && afterSeq > 0:
			if e.Seq != afterSeq {
				done, good = true, false
				return false
			}
		case prev == nil && e.ParentID != "", prev != nil && e.ParentID != prev.ID:
			done, good = true, false
			return false
		default:
			if !fn(e) {
				done = true
				return false
			}
		}
		prev, lower = &e, e.Seq+1
		return true
	}
	for {
		n, err := read(lower, step)
		if err != nil {
			return false, err
		}
		if done {
			return good, nil
		}
		if n < batch {
			// Nothing newer: the chain must have reached the head.
			return prev != nil && prev.Seq == headSeq, nil
		}
	}
}

// ForwardWindows collects the page after afterSeq on any session: the
// branch's entries in the seqs [lo, hi) of a window are read by back, which
// walks the active branch from its newest entry with seq < hi towards the
// root, newest first, until fn returns false (at most hi-lo+1 entries are
// needed, the first below lo ending the walk). The first window is a page's
// worth of seqs; each next one is sized by how many seqs the messages took
// in the last (twice as wide when it had none), so a page costs a few walks
// of about its own length even where other branches fill the seqs between.
func ForwardWindows(headSeq, afterSeq int64, page *ForwardPage, back func(lo, hi int64, fn func(core.Entry) bool) error) error {
	width := int64(2*page.max + 16)
	for lo := afterSeq + 1; lo <= headSeq && !page.full(); {
		hi := min(lo+width, headSeq+1)
		var win []core.Entry
		if err := back(lo, hi, func(e core.Entry) bool {
			if e.Seq < lo {
				return false
			}
			win = append(win, e)
			return true
		}); err != nil {
			return err
		}
		before := page.count
		for i := len(win) - 1; i >= 0; i-- {
			if !page.Collect(win[i]) {
				break
			}
		}
		// The next window: as wide as the messages still wanted took seqs
		// in this one, and a quarter more; twice as wide when it had none.
		if found := int64(page.count - before); found > 0 {
			need := int64(page.max - page.count)
			width = need*(hi-lo)/found + need*(hi-lo)/found/4 + 16
		} else {
			width *= 2
		}
		lo = hi
	}
	return nil
}

// ForwardFromHead collects the page after afterSeq on any session from one
// walk of its active branch from the head, newest first (walk hands each
// entry to fn until fn returns false): a store without jump pointers, whose
// every window of ForwardWindows would start with a walk from the head,
// reads a forward page so in one walk.
func ForwardFromHead(afterSeq int64, page *ForwardPage, walk func(fn func(core.Entry) bool) error) error {
	tail := forwardTail{max: page.max}
	err := walk(func(e core.Entry) bool {
		if e.Seq <= afterSeq {
			return false
		}
		tail.add(e)
		return true
	})
	if err != nil {
		return err
	}
	tail.fill(page)
	return nil
}

// AroundFromHead reads the page around entry e as Around does, from one
// walk of the active branch from the head (a store without jump pointers:
// Around's two halves would each walk from the head): the entries newer
// than e that the forwards half holds, then e and the backwards half.
func AroundFromHead(sessionID string, e core.Entry, maxMessages int, headSeq int64,
	walk func(fn func(core.Entry) bool) error) (entries []core.Entry, hasMore, hasNewer bool, err error) {
	if e.SessionID != sessionID {
		return nil, false, false, otherSession(sessionID, e)
	}
	half, newerMax := AroundHalves(maxMessages)
	newer := NewForwardPage(newerMax, headSeq)
	tail := forwardTail{max: newer.max}
	older := NewPage(half)
	reached, onBranch := false, false
	err = walk(func(x core.Entry) bool {
		if x.Seq > e.Seq {
			tail.add(x)
			return true
		}
		if !reached {
			reached, onBranch = true, x.ID == e.ID
			if !onBranch {
				return false
			}
		}
		return older.Collect(x)
	})
	if err != nil {
		return nil, false, false, err
	}
	if !onBranch {
		return nil, false, false, offBranch(sessionID, e)
	}
	tail.fill(newer)
	before, hasMore := older.Done()
	after, hasNewer := newer.Done()
	return append(before, after...), hasMore, hasNewer, nil
}

// AroundFromStop reads the page around entry e as AroundFromHead does,
// from a walk of the active branch from the head that the store made
// itself (PostgreSQL's, inside the server): tail, the entries newer than
// e, oldest first, that the forwards half (AroundHalves) holds, and at,
// the id of the newest entry of the branch with seq <= e's ("" when there
// is none); older walks the branch back from e, handing each entry to fn
// until fn returns false.
func AroundFromStop(sessionID string, e core.Entry, maxMessages int, headSeq int64, tail []core.Entry, at string,
	older func(fn func(core.Entry) bool) error) (entries []core.Entry, hasMore, hasNewer bool, err error) {
	if e.SessionID != sessionID {
		return nil, false, false, otherSession(sessionID, e)
	}
	if at != e.ID {
		return nil, false, false, offBranch(sessionID, e)
	}
	half, newerMax := AroundHalves(maxMessages)
	back := NewPage(half)
	if err := older(back.Collect); err != nil {
		return nil, false, false, err
	}
	newer := NewForwardPage(newerMax, headSeq)
	for _, x := range tail {
		if !newer.Collect(x) {
			break
		}
	}
	before, hasMore := back.Done()
	after, hasNewer := newer.Done()
	return append(before, after...), hasMore, hasNewer, nil
}

// AroundHalves splits the page around an entry of maxMessages messages:
// the messages up to and including the entry, and those after it.
func AroundHalves(maxMessages int) (older, newer int) {
	half := max(maxMessages/2, 1)
	return half, max(maxMessages-half, 1)
}

func otherSession(sessionID string, e core.Entry) error {
	return core.InvalidField("around", "entry %s belongs to session %s, not %s", core.Quote(e.ID), e.SessionID, sessionID)
}

func offBranch(sessionID string, e core.Entry) error {
	return core.InvalidField("around", "entry %s is not on the active branch of session %s (the head has moved to another branch)", core.Quote(e.ID), sessionID)
}

// forwardTail keeps, from a walk of the active branch newest first, the
// oldest entries a forward page of max messages can hold: an entry with
// max messages older than it (among those kept) is past the page's end.
type forwardTail struct {
	max         int
	win         []core.Entry // newest first; win[start:] are kept
	start, msgs int
}

func (t *forwardTail) add(e core.Entry) {
	t.win = append(t.win, e)
	t.msgs += isMessage(e)
	for t.start < len(t.win) && t.msgs-isMessage(t.win[t.start]) >= t.max {
		t.msgs -= isMessage(t.win[t.start])
		t.start++
	}
	if t.start >= 1024 && t.start > len(t.win)/2 {
		t.win, t.start = append(t.win[:0], t.win[t.start:]...), 0
	}
}

// fill hands the kept entries to page, oldest first.
func (t *forwardTail) fill(page *ForwardPage) {
	for i := len(t.win) - 1; i >= t.start; i-- {
		if !page.Collect(t.win[i]) {
			break
		}
	}
}

func isMessage(e core.Entry) int {
	if e.Kind.IsMessage() {
		return 1
	}
	return 0
}

// ForwardPage collects a page of history reading towards the head:
// entries until max user/assistant messages are in (other kinds ride along
// without counting, before the first message and between messages).
type ForwardPage struct {
	max, count int
	headSeq    int64
	entries    []core.Entry
}

// NewForwardPage is a ForwardPage of max messages on a branch whose head
// has seq headSeq.
func NewForwardPage(max int, headSeq int64) *ForwardPage {
	return &ForwardPage{max: max, headSeq: headSeq, entries: []core.Entry{}}
}

// Collect takes the next entry, oldest first; it reports whether the page
// wants more.
func (p *ForwardPage) Collect(e core.Entry) bool {
	if p.full() {
		return false
	}
	p.entries = append(p.entries, e)
	if e.Kind.IsMessage() {
		p.count++
	}
	return !p.full()
}

func (p *ForwardPage) full() bool { return p.count >= p.max }

// Reset empties the page (a read that failed its checks starts again).
func (p *ForwardPage) Reset() { p.entries, p.count = p.entries[:0], 0 }

// Done returns the page oldest first, and whether the branch goes on after
// its last entry (the head is the branch's newest entry).
func (p *ForwardPage) Done() ([]core.Entry, bool) {
	hasNewer := len(p.entries) > 0 && p.entries[len(p.entries)-1].Seq < p.headSeq
	return p.entries, hasNewer
}

// Around reads the page of the active branch around entry e of session
// sessionID: the entries up to and including e (older reads a backwards
// page of the messages before beforeSeq) and those after it (newer reads a
// forwards page after afterSeq), about half of maxMessages each. An entry
// of another session or off the active branch is a CodeInvalid error naming
// the field "around".
func Around(ctx context.Context, sessionID string, e core.Entry, maxMessages int,
	older func(ctx context.Context, beforeSeq int64, max int) ([]core.Entry, bool, error),
	newer func(ctx context.Context, afterSeq int64, max int) ([]core.Entry, bool, error)) (entries []core.Entry, hasMore, hasNewer bool, err error) {
	if e.SessionID != sessionID {
		return nil, false, false, otherSession(sessionID, e)
	}
	half, newerMax := AroundHalves(maxMessages)
	before, hasMore, err := older(ctx, e.Seq+1, half)
	if err != nil {
		return nil, false, false, err
	}
	if len(before) == 0 || before[len(before)-1].ID != e.ID {
		return nil, false, false, offBranch(sessionID, e)
	}
	after, hasNewer, err := newer(ctx, e.Seq, newerMax)
	if err != nil {
		return nil, false, false, err
	}
	return append(before, after...), hasMore, hasNewer, nil
}
