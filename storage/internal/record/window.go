package record

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// The window summary (core.Window) of each session is kept by each store
// as a summary (JSON, without its evidence lists) with the head it
// describes, and its evidence lists one row per item, so that an append
// writes only the items it adds. An append under the head folds its
// entries in (Fold); any other change of head leaves the summary
// describing an older head, and a read rebuilds it (Rebuild). A summary is
// right whenever its head is the session's head: entries never change, so
// the summary of the path from the root to an entry never does either.

// The evidence lists by number, as the stores keep them.
const (
	ListDecisions  = 0
	ListFiles      = 1
	ListCheckpoint = 2 // the decisions of the newest checkpoint
)

// WindowLists returns w's lists by list number.
func WindowLists(w *core.Window) [3]*[]string {
	return [3]*[]string{&w.Decisions, &w.Files, &w.LastCheckpointDecisions}
}

// SetLists gives win the evidence lists of lists.
func SetLists(win *core.Window, lists core.Window) {
	win.Decisions, win.Files, win.LastCheckpointDecisions = lists.Decisions, lists.Files, lists.LastCheckpointDecisions
}

// EvidenceKind reports whether folding an entry of kind k may change the
// evidence lists.
func EvidenceKind(k core.Kind) bool {
	switch k {
	case core.KindWorkerResult, core.KindArtifactCreated, core.KindCheckpoint, core.KindCompaction:
		return true
	}
	return false
}

// WindowState is the stored summary of win: its JSON without the
// evidence lists.
func WindowState(win core.Window) ([]byte, error) {
	SetLists(&win, core.Window{})
	return json.Marshal(win)
}

// DecodeWindow reads a stored summary; found is false when there is none
// or it is unreadable (then it is rebuilt).
func DecodeWindow(state string) (win core.Window, found bool) {
	if state == "" || json.Unmarshal([]byte(state), &win) != nil {
		return core.Window{}, false
	}
	return win, true
}

// ListWrite is what writing one evidence list changes, against the list
// as stored: with Clear its stored items go first; Items are written at
// positions From, From+1, …
type ListWrite struct {
	List  int
	Clear bool
	From  int
	Items []string
}

// ListWrites is what writing win's lists over stored (the lists as the
// store holds them) changes: items added at the end are written; a list
// that changed otherwise is written again. Lists that did not change are
// left out.
func ListWrites(win, stored core.Window) []ListWrite {
	var out []ListWrite
	now, was := WindowLists(&win), WindowLists(&stored)
	for list := range now {
		n, o := *now[list], *was[list]
		w := ListWrite{List: list, From: len(o)}
		if len(n) < len(o) || !slices.Equal(n[:len(o)], o) {
			w.Clear, w.From = true, 0
		}
		w.Items = n[w.From:]
		if w.Clear || len(w.Items) > 0 {
			out = append(out, w)
		}
	}
	return out
}

// Folded is the summary an append leaves: Win, to be written with the
// evidence lists when Lists (as changes against Stored, the lists as the
// store holds them: ListWrites), else the summary alone.
type Folded struct {
	Win, Stored core.Window
	Lists       bool
}

// Fold folds out, just appended as a chain to session sessionID, into its
// summary when that chain hangs under prevHead (the head before the
// append) and the stored summary (summary) describes prevHead; a new root
// starts an empty summary. ok is false otherwise: the summary is left as
// it is (stale) and rebuilt when next read. The evidence lists are read
// (items, or the cache) only when an entry may change them.
func (c *ListCache) Fold(sessionID, prevHead string, out []core.Entry,
	summary func() (head string, win core.Window, found bool, err error),
	items func(into *core.Window) (found bool, err error)) (f Folded, ok bool, err error) {
	if len(out) == 0 || out[0].ParentID != prevHead {
		return Folded{}, false, nil
	}
	f.Lists = prevHead == "" // a new root: whatever items are stored go
	if prevHead != "" {
		head, state, found, err := summary()
		if err != nil || !found || head != prevHead {
			return Folded{}, false, err // never built, or stale: built when read
		}
		f.Win = state
	}
	for _, e := range out {
		f.Lists = f.Lists || EvidenceKind(e.Kind)
	}
	if f.Lists {
		cached, found := c.recent(sessionID, prevHead)
		if found && prevHead != "" {
			f.Stored = cached
		} else if found, err = items(&f.Stored); err != nil {
			return Folded{}, false, err
		}
		if prevHead != "" && found {
			SetLists(&f.Win, f.Stored)
		}
	}
	for _, e := range out {
		checkpoint.Track(&f.Win, e)
	}
	return f, true, nil
}

// ListCache keeps the evidence lists last written for a few sessions of
// one database, by the head they describe, so that a session recording
// evidence does not read its lists back on every append. An entry is used
// only when its head is the head an append hangs under (on PostgreSQL, as
// read under the session's row lock, since another process's append moves
// the head), so one left by a transaction that rolled back is never used.
// Lists only grow by appending (a boundary replaces them), so sharing
// their arrays is safe. The zero value is ready to use.
type ListCache struct {
	mu    sync.Mutex
	order []string // least recent first
	m     map[string]core.Window
}

const listCacheSessions = 32

func (c *ListCache) recent(sessionID, head string) (core.Window, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[sessionID]
	if !ok || w.HeadID != head {
		return core.Window{}, false
	}
	return w, true
}

// Keep notes win's lists as the ones stored for sessionID.
func (c *ListCache) Keep(sessionID string, win core.Window) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]core.Window{}
	}
	if i := slices.Index(c.order, sessionID); i >= 0 {
		c.order = slices.Delete(c.order, i, i+1)
	}
	c.order = append(c.order, sessionID)
	c.m[sessionID] = core.Window{HeadID: win.HeadID, Decisions: win.Decisions, Files: win.Files, LastCheckpointDecisions: win.LastCheckpointDecisions}
	if len(c.order) > listCacheSessions {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// Forget drops what the cache holds for sessionID.
func (c *ListCache) Forget(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, sessionID)
	if i := slices.Index(c.order, sessionID); i >= 0 {
		c.order = slices.Delete(c.order, i, i+1)
	}
}

// Rebuild computes the summary of the active branch from a walk back from
// the head: Visit takes the entries newest first and reports whether the
// walk should go on (to the newest boundary, then on until it knows the
// model, the effort and the newest checkpoint before it, or to the root);
// Window folds the entries from the boundary to the head in order. The
// zero value is ready to use.
type Rebuild struct {
	kept   []core.Entry
	before core.Window
	past   bool // past the boundary
}

// Visit takes the next entry of the walk, newest first.
func (r *Rebuild) Visit(e core.Entry) bool {
	if !r.past {
		r.kept = append(r.kept, e)
		r.past = e.Kind == core.KindCompaction
		return true
	}
	return Carried(&r.before, e)
}

// Window is the summary of the entries visited.
func (r *Rebuild) Window() core.Window {
	win := r.before
	for i := len(r.kept) - 1; i >= 0; i-- {
		checkpoint.Track(&win, r.kept[i])
	}
	return win
}

// Carried notes in before what an entry older than the boundary carries
// over it (the newest model, effort and checkpoint); it reports whether
// older entries may still matter.
func Carried(before *core.Window, e core.Entry) bool {
	var one core.Window
	switch e.Kind {
	case core.KindModelChanged:
		if before.Model == "" {
			checkpoint.Track(&one, e)
			before.Model = one.Model
		}
	case core.KindEffortChanged:
		if before.Effort == "" {
			checkpoint.Track(&one, e)
			before.Effort = one.Effort
		}
	case core.KindCheckpoint:
		if before.LastCheckpointID == "" {
			checkpoint.Track(&one, e)
			before.LastCheckpointID, before.LastCheckpointDecisions = one.LastCheckpointID, one.LastCheckpointDecisions
		}
	}
	return before.Model == "" || before.Effort == "" || before.LastCheckpointID == ""
}

// Tracker folds the entries of a restore into the summary of the
// restored head while they form one chain from the root, so that the
// first read of a restored session need not rebuild it (on a session of a
// million entries, seconds).
type Tracker struct {
	tracking bool
	tip      string      // the entry win describes ("" before the first)
	win      core.Window // of the chain up to tip
}

// NewTracker is a Tracker of a restore; on is false for a session already
// present (it keeps its own summary), and then it tracks nothing.
func NewTracker(on bool) Tracker { return Tracker{tracking: on} }

// Track folds e in while the entries form one chain.
func (t *Tracker) Track(e core.Entry) {
	if !t.tracking {
		return
	}
	if e.ParentID != t.tip {
		t.tracking, t.win = false, core.Window{}
		return
	}
	checkpoint.Track(&t.win, e)
	t.tip = e.ID
}

// Summary is the summary of head when the chain reached it (ok false:
// the store rebuilds it from the record).
func (t *Tracker) Summary(head string) (core.Window, bool) {
	if !t.tracking || t.tip != head {
		return core.Window{}, false
	}
	return t.win, true
}
