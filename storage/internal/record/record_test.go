package record

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func TestListWritesAppendsOrRewrites(t *testing.T) {
	stored := core.Window{Decisions: []string{"a", "b"}, Files: []string{"f"}}
	win := core.Window{Decisions: []string{"a", "b", "c"}, Files: []string{"g"}, LastCheckpointDecisions: nil}
	got := fmt.Sprint(ListWrites(win, stored))
	// decisions grew at the end: only "c" at 2; files changed: cleared and
	// written again; the checkpoint's list did not change: left out.
	want := fmt.Sprint([]ListWrite{{List: ListDecisions, From: 2, Items: []string{"c"}}, {List: ListFiles, Clear: true, Items: []string{"g"}}})
	if got != want {
		t.Fatalf("ListWrites: %s, want %s", got, want)
	}
	if w := ListWrites(stored, stored); len(w) != 0 {
		t.Fatalf("unchanged lists: %v, want none", w)
	}
}

// chain is a session's entries e1 (root) … en by seq, each the child of
// the one before.
func chain(n int) []core.Entry {
	out := make([]core.Entry, n)
	for i := range out {
		out[i] = core.Entry{ID: fmt.Sprintf("e%d", i+1), SessionID: "s", Seq: int64(i + 1), Kind: core.KindAssistantMessage}
		if i > 0 {
			out[i].ParentID = out[i-1].ID
		}
	}
	return out
}

// reader reads es (by seq) newest first from upper down, batch at a time.
func reader(es []core.Entry, batch int) func(int64, func(core.Entry) bool) (int, error) {
	return func(upper int64, visit func(core.Entry) bool) (int, error) {
		n := 0
		for i := len(es) - 1; i >= 0 && n < batch; i-- {
			if es[i].Seq > upper {
				continue
			}
			n++
			if !visit(es[i]) {
				break
			}
		}
		return n, nil
	}
}

func TestScanChainChecksEveryLink(t *testing.T) {
	es := chain(40)
	var seen []string
	ok, err := ScanChain("e40", 40, 16, reader(es, 16), func(e core.Entry) bool { seen = append(seen, e.ID); return true })
	if err != nil || !ok || len(seen) != 40 || seen[39] != "e1" {
		t.Fatalf("a sound chain: ok %v err %v, %d entries", ok, err, len(seen))
	}
	broken := chain(40)
	broken[20].ParentID = "e5" // e21's parent is not e20
	ok, err = ScanChain("e40", 40, 16, reader(broken, 16), func(core.Entry) bool { return true })
	if err != nil || ok {
		t.Fatalf("a broken link: ok %v err %v, want not ok (the walk names it)", ok, err)
	}
	ok, _ = ScanChain("e39", 40, 16, reader(es, 16), func(core.Entry) bool { return true })
	if ok {
		t.Fatal("the first row is not the head asked for, yet ok")
	}
}

func TestWalkerNamesTheProblem(t *testing.T) {
	es := chain(5)
	byID := map[string]core.Entry{}
	for _, e := range es {
		byID[e.ID] = e
	}
	read := func(_ context.Context, from string, batch int) ([]core.Entry, string, error) {
		var out []core.Entry
		for id := from; id != "" && len(out) < batch; {
			e, ok := byID[id]
			if !ok {
				return out, id, nil
			}
			out = append(out, e)
			id = e.ParentID
		}
		return out, "", nil
	}
	var n int
	if err := NewWalker("s", read).Walk(context.Background(), "e5", true, 2, func(core.Entry) bool { n++; return true }); err != nil || n != 5 {
		t.Fatalf("a sound walk: %v, %d entries", err, n)
	}
	for _, c := range []struct {
		name   string
		change func()
		want   string
	}{
		{"missing parent", func() { e := byID["e3"]; e.ParentID = "gone"; byID["e3"] = e }, `entry "e3" has parent "gone", which does not exist`},
		{"cycle", func() { e := byID["e3"]; e.ParentID = "e4"; byID["e3"] = e }, `cycle: entry "e4" is its own ancestor`},
		{"other session", func() { e := byID["e2"]; e.SessionID = "t"; byID["e2"] = e }, `entry "e2" (parent of "e3") belongs to session t`},
	} {
		for _, e := range es {
			byID[e.ID] = e
		}
		c.change()
		err := NewWalker("s", read).Walk(context.Background(), "e5", true, 2, func(core.Entry) bool { return true })
		if core.ErrorCode(err) != core.CodeCorrupt || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s: %v, want a corrupt error saying %s", c.name, err, c.want)
		}
	}
}

func TestCheckEntriesNamesWhichOne(t *testing.T) {
	ok := core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(core.AssistantMessagePayload{Text: "hi"})}
	big := ok
	big.Payload = []byte(`{"text":"` + strings.Repeat("x", 100) + `"}`)
	err := CheckEntries([]core.NewEntry{ok, big}, 64)
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "entry 2 of 2") || !strings.Contains(err.Error(), "over the limit of 64 bytes") {
		t.Fatalf("an oversized second entry: %v", err)
	}
	if err := CheckEntries([]core.NewEntry{ok}, 64); err != nil {
		t.Fatalf("a small entry: %v", err)
	}
}

func TestSearchTextSkipsIdentifiers(t *testing.T) {
	payload := []byte(`{"toolId":"t_123","title":"Read main.go","input":{"path":"/repo/main.go","id":"x9"},"status":"ok"}`)
	got := SearchText(core.KindToolStarted, payload)
	if strings.Contains(got, "t_123") || strings.Contains(got, "x9") || strings.Contains(got, "ok") {
		t.Fatalf("SearchText kept an identifier or code: %q", got)
	}
	if !strings.Contains(got, "Read main.go") || !strings.Contains(got, "/repo/main.go") {
		t.Fatalf("SearchText lost the text: %q", got)
	}
	if got := SearchText(core.KindUsageReported, []byte(`{"model":"m"}`)); got != "" {
		t.Fatalf("a bookkeeping kind has searchable text %q", got)
	}
}

// TestForwardFromHeadIsTheForwardPage: the page after afterSeq that one
// walk from the head keeps is the page read oldest first from afterSeq
// (mixed kinds, messages at uneven gaps, pages near the root, the head and
// far from it, long walks that drop most of what they pass), and the walk
// stops at the first entry at or below afterSeq.
func TestForwardFromHeadIsTheForwardPage(t *testing.T) {
	es := chain(5000)
	for i := range es {
		if i%7 != 0 && i%3 != 1 {
			es[i].Kind = core.KindToolStarted
		}
	}
	head := es[len(es)-1].Seq
	for _, afterSeq := range []int64{0, 1, 2, 100, 2500, 4990, 4999, 5000} {
		for _, max := range []int{1, 2, 3, 60, 10_000} {
			want := NewForwardPage(max, head)
			for _, e := range es[afterSeq:] {
				if !want.Collect(e) {
					break
				}
			}
			got := NewForwardPage(max, head)
			walked, below := 0, 0
			err := ForwardFromHead(afterSeq, got, func(fn func(core.Entry) bool) error {
				for i := len(es) - 1; i >= 0; i-- {
					walked++
					if !fn(es[i]) {
						below++
						return nil
					}
				}
				return nil
			})
			w, wNewer := want.Done()
			g, gNewer := got.Done()
			if err != nil || fmt.Sprint(g) != fmt.Sprint(w) || gNewer != wNewer {
				t.Fatalf("after %d, max %d: %d entries (newer %v), want %d (newer %v); err %v", afterSeq, max, len(g), gNewer, len(w), wNewer, err)
			}
			if wantWalk := len(es) - int(afterSeq) + min(int(afterSeq), 1); walked != wantWalk || below != min(int(afterSeq), 1) {
				t.Fatalf("after %d: walked %d entries (%d at or below it), want %d", afterSeq, walked, below, wantWalk)
			}
		}
	}
}

// TestAroundFromHeadIsAround: the page around an entry read in one walk
// from the head is Around's (its two halves read apart), at the root, the
// head and between; an entry not on the walked branch is refused as
// Around refuses it.
func TestAroundFromHeadIsAround(t *testing.T) {
	es := chain(3000)
	for i := range es {
		if i%5 != 0 && i%4 != 1 {
			es[i].Kind = core.KindToolStarted
		}
	}
	head := es[len(es)-1].Seq
	walk := func(fn func(core.Entry) bool) error {
		for i := len(es) - 1; i >= 0; i-- {
			if !fn(es[i]) {
				return nil
			}
		}
		return nil
	}
	older := func(_ context.Context, beforeSeq int64, max int) ([]core.Entry, bool, error) {
		p := NewPage(max)
		for i := int(beforeSeq) - 2; i >= 0 && p.Collect(es[i]); i-- {
		}
		out, more := p.Done()
		return out, more, nil
	}
	newer := func(_ context.Context, afterSeq int64, max int) ([]core.Entry, bool, error) {
		p := NewForwardPage(max, head)
		for _, e := range es[afterSeq:] {
			if !p.Collect(e) {
				break
			}
		}
		out, n := p.Done()
		return out, n, nil
	}
	for _, at := range []int{0, 1, 2, 1500, 2997, 2998, 2999} {
		for _, max := range []int{1, 2, 3, 60, 10_000} {
			w, wMore, wNewer, wErr := Around(context.Background(), "s", es[at], max, older, newer)
			g, gMore, gNewer, gErr := AroundFromHead("s", es[at], max, head, walk)
			if wErr != nil || gErr != nil || fmt.Sprint(g) != fmt.Sprint(w) || gMore != wMore || gNewer != wNewer {
				t.Fatalf("around e%d, max %d: %d entries (more %v newer %v, %v), want %d (%v %v, %v)",
					at+1, max, len(g), gMore, gNewer, gErr, len(w), wMore, wNewer, wErr)
			}
		}
	}
	off := core.Entry{ID: "x", SessionID: "s", Seq: 1500, ParentID: "e1499"}
	if _, _, _, err := AroundFromHead("s", off, 10, head, walk); core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "active branch") {
		t.Fatalf("an entry off the branch: %v", err)
	}
	if _, _, _, err := AroundFromHead("s2", es[5], 10, head, walk); core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "belongs to session s") {
		t.Fatalf("another session's entry: %v", err)
	}
}
