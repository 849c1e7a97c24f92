package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// RunDump runs the dump part of the suite against a store that implements
// core.Dumper: DumpStream hands over what Dump returns (the head, every
// entry of the tree in sequence order, the audit records), and an error of
// either callback stops it and comes back as it is.
func RunDump(t *testing.T, open Open) {
	st := open(t)
	t.Cleanup(func() { _ = st.Close() })
	dm, ok := st.(core.Dumper)
	if !ok {
		t.Fatalf("%T does not implement core.Dumper", st)
	}
	s, err := st.CreateSession(ctx, core.Session{Harness: "codex", Title: "dump"})
	if err != nil {
		t.Fatal(err)
	}
	es := MustAppend(t, st, s.ID, assistant("one"), assistant("two"), assistant("three"))
	if _, err := st.AppendTo(ctx, s.ID, es[0].ID, assistant("a branch")); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendAudit(ctx, core.AuditRecord{Source: "test", Kind: "dump.audit", Entity: s.ID, Body: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	whole, err := dm.Dump(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Entries) != 4 || len(whole.Audit) != 1 || whole.Session.ID != s.ID {
		t.Fatalf("Dump: %d entries, %d audit records, session %q; want 4, 1, %s", len(whole.Entries), len(whole.Audit), whole.Session.ID, s.ID)
	}

	t.Run("same-as-dump", func(t *testing.T) {
		var got core.SessionDump
		c := &collect{d: &got}
		if err := dm.DumpStream(ctx, s.ID, func(h core.Session) error { got.Session = h; return nil }, c); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(whole)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Fatalf("DumpStream handed over\n%s\nDump returned\n%s", b, a)
		}
	})
	t.Run("callback-errors-stop-it", func(t *testing.T) {
		stop := errors.New("stop here")
		c := &collect{d: &core.SessionDump{}, failAt: 2, err: stop}
		if err := dm.DumpStream(ctx, s.ID, func(core.Session) error { return nil }, c); !errors.Is(err, stop) {
			t.Fatalf("an entry's error: DumpStream returned %v, want it as it is", err)
		}
		if n := len(c.d.Entries); n != 2 {
			t.Fatalf("%d entries handed over after the error of the second", n)
		}
		c = &collect{d: &core.SessionDump{}}
		if err := dm.DumpStream(ctx, s.ID, func(core.Session) error { return stop }, c); !errors.Is(err, stop) || len(c.d.Entries) != 0 {
			t.Fatalf("the head's error: %v with %d entries handed over, want it before any", err, len(c.d.Entries))
		}
	})
	t.Run("missing-session", func(t *testing.T) {
		err := dm.DumpStream(ctx, "s_nosuch", func(core.Session) error { return nil }, &collect{d: &core.SessionDump{}})
		if !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("DumpStream of a missing session: %v, want not found", err)
		}
	})
}

// collect is a core.Restorer that keeps what it gets; with failAt > 0 the
// entry after failAt entries fails with err.
type collect struct {
	d      *core.SessionDump
	failAt int
	err    error
}

func (c *collect) Entry(e core.Entry) error {
	if c.failAt > 0 && len(c.d.Entries) == c.failAt {
		return c.err
	}
	c.d.Entries = append(c.d.Entries, e)
	return nil
}

func (c *collect) Audit(a core.AuditRecord) error {
	c.d.Audit = append(c.d.Audit, a)
	return nil
}

// BenchDump measures the memory a dump of one large session takes on
// st, which must implement core.Dumper: "whole" is Dump, which returns
// the session in memory; "stream" is DumpStream handing each entry to a
// consumer that keeps nothing (as bridge store copy's does); "restore" is
// RestoreStream of a new session of the same size, fed one entry at a time
// (as bridge store copy feeds the store it copies to). Each reports
// peak-heap-MB, the most the heap's objects grew over the dump (sampled
// every millisecond, after a GC), and entries/s. The session has entries
// entries of payload bytes each, restored once before the timing.
func BenchDump(b *testing.B, st core.Store, entries, payload int) {
	dm, ok := st.(core.Dumper)
	if !ok {
		b.Fatalf("%T does not implement core.Dumper", st)
	}
	id := fillDump(b, dm, entries, payload)
	b.Run("whole", func(b *testing.B) {
		benchPeak(b, entries, func() error {
			d, err := dm.Dump(ctx, id)
			if err == nil && len(d.Entries) != entries {
				err = fmt.Errorf("Dump returned %d entries, want %d", len(d.Entries), entries)
			}
			return err
		})
	})
	b.Run("stream", func(b *testing.B) {
		benchPeak(b, entries, func() error {
			n := &count{}
			err := dm.DumpStream(ctx, id, func(core.Session) error { return nil }, n)
			if err == nil && n.entries != entries {
				err = fmt.Errorf("DumpStream handed over %d entries, want %d", n.entries, entries)
			}
			return err
		})
	})
	// restore: RestoreStream of a new session as bridge store copy feeds
	// it, each entry made as it is handed over (so what the heap holds is
	// the store's).
	b.Run("restore", func(b *testing.B) {
		round := 0
		benchPeak(b, entries, func() error {
			round++
			return restoreChain(dm, fmt.Sprintf("restorebench%d_%d", entries, round), entries, payload)
		})
	})
}

// fillDump restores a session of n entries of size bytes, one chain.
func fillDump(b *testing.B, dm core.Dumper, n, size int) string {
	b.Helper()
	name := fmt.Sprintf("dumpbench%d", n)
	if err := restoreChain(dm, name, n, size); err != nil {
		b.Fatal(err)
	}
	return "s_" + name
}

// restoreChain restores session "s_"+name: one chain of n entries of size
// bytes, their ids "e_"+name+"_"+seq.
func restoreChain(dm core.Dumper, name string, n, size int) error {
	s := core.Session{ID: "s_" + name, Harness: "codex", Title: "dump bench"}
	text := strings.Repeat("x", max(size-30, 1))
	start := time.Now().UTC().Add(-time.Hour)
	_, err := dm.RestoreStream(ctx, s, func(r core.Restorer) error {
		parent := ""
		for i := 1; i <= n; i++ {
			e := core.Entry{ID: fmt.Sprintf("e_%s_%08d", name, i), SessionID: s.ID, ParentID: parent, Seq: int64(i),
				Kind: core.KindAssistantMessage, Payload: core.Payload(core.AssistantMessagePayload{Text: text}),
				CreatedAt: start.Add(time.Duration(i) * time.Millisecond)}
			if err := r.Entry(e); err != nil {
				return err
			}
			parent = e.ID
		}
		return nil
	})
	return err
}

type count struct{ entries int }

func (c *count) Entry(core.Entry) error       { c.entries++; return nil }
func (c *count) Audit(core.AuditRecord) error { return nil }

// benchPeak runs dump b.N times and reports the peak growth of the heap's
// objects over any run (MB) and entries per second.
func benchPeak(b *testing.B, entries int, dump func() error) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	var peak uint64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		base := heap()
		var top atomic.Uint64
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				if h := heap(); h > top.Load() {
					top.Store(h)
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
		b.StartTimer()
		err := dump()
		b.StopTimer()
		if h := heap(); h > top.Load() {
			top.Store(h)
		}
		close(done)
		if err != nil {
			b.Fatal(err)
		}
		if top.Load() > base && top.Load()-base > peak {
			peak = top.Load() - base
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
