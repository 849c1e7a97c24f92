package dsh_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/core"
)

// synth builds a log from event lines.
func synth(t *testing.T, events ...string) *dsh.Log {
	t.Helper()
	log := &dsh.Log{Header: dsh.Header{Type: "session", ID: "session-x"}}
	for _, l := range events {
		var ev dsh.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		log.Events = append(log.Events, ev)
	}
	return log
}

const (
	u1 = `{"type":"user/message","seq":1,"data":{"content":[{"type":"text","text":"one"}],"source":{"kind":"user"}},"surfaceOp":"append"}`
	a2 = `{"type":"assistant/message","seq":2,"data":{"message":{"content":[{"type":"text","text":"two"}]}},"surfaceOp":"append"}`
	u3 = `{"type":"user/message","seq":3,"data":{"content":[{"type":"text","text":"three"}],"source":{"kind":"user"}},"surfaceOp":"append"}`
	a4 = `{"type":"assistant/message","seq":4,"data":{"message":{"content":[{"type":"text","text":"four"}]}},"surfaceOp":"append"}`
)

func bracket(id string, seq int, turn string, start, end int64, tokens int) []string {
	n := func(i int) string { b, _ := json.Marshal(seq + i); return string(b) }
	se, _ := json.Marshal(map[string]any{"op": "replace", "start": start, "end": end})
	seqs, _ := json.Marshal([]int64{start, end})
	return []string{
		`{"type":"compaction/start","seq":` + n(0) + `,"data":{"compactionId":"` + id + `","turn":` + turn + `}}`,
		`{"type":"compaction/summary","seq":` + n(1) + `,"data":{"compactionId":"` + id + `","summary":[{"type":"text","text":"sum ` + id + `"}],"shadowedRange":{"start":` + itoa(int(start)) + `,"end":` + itoa(int(end)) + `},"shadowedSeqs":` + string(seqs) + `,"shadowedTokenCount":` + itoa(tokens) + `}}`,
		`{"type":"user/message","seq":` + n(2) + `,"data":{"content":[{"type":"text","text":"<compacted-summary>"}],"source":{"kind":"plugin","plugin":"compact","compactionId":"` + id + `"}},"surfaceOp":` + string(se) + `}`,
		`{"type":"compaction/end","seq":` + n(3) + `,"data":{"compactionId":"` + id + `","turn":` + turn + `}}`,
	}
}

func TestBracketTriggerAndStaleness(t *testing.T) {
	t.Run("inside a turn is auto", func(t *testing.T) {
		evs := append([]string{`{"type":"turn/start","seq":0,"data":{"turn":1}}`, u1, a2}, bracket("c1", 5, "1", 1, 2, 77)...)
		cs := compacted(t, dsh.MapLog(synth(t, evs...)).Entries)
		if len(cs) != 1 || cs[0].Trigger != core.TriggerAuto || *cs[0].ShadowedTokens != 77 || cs[0].PreTokens != nil || cs[0].Summary != "sum c1" {
			t.Fatalf("compacted %+v", cs)
		}
	})
	t.Run("standalone is manual", func(t *testing.T) {
		evs := append([]string{u1, a2}, bracket("c1", 5, "null", 1, 2, 10)...)
		cs := compacted(t, dsh.MapLog(synth(t, evs...)).Entries)
		if len(cs) != 1 || cs[0].Trigger != core.TriggerManual {
			t.Fatalf("compacted %+v", cs)
		}
	})
	t.Run("end-seed makes an open bracket stale", func(t *testing.T) {
		stale := bracket("old", 5, "null", 1, 2, 10)[:2]
		evs := append([]string{u1, a2}, stale...)
		evs = append(evs, `{"type":"session/end-seed","seq":7,"data":{}}`)
		evs = append(evs, bracket("new", 8, "null", 1, 2, 12)...)
		m := dsh.MapLog(synth(t, evs...))
		cs := compacted(t, m.Entries)
		if len(cs) != 1 || !strings.HasSuffix(cs[0].NativeID, "#compaction:new") || m.StaleBrackets != 1 {
			t.Fatalf("compacted %+v, stale %d", cs, m.StaleBrackets)
		}
		checkEntries(t, m.Entries)
	})
	t.Run("failed compaction reports nothing compacted", func(t *testing.T) {
		evs := []string{u1, `{"type":"compaction/start","seq":2,"data":{"compactionId":"c","turn":null}}`,
			`{"type":"compaction/end","seq":3,"data":{"compactionId":"c","turn":null,"error":{"code":"summary"}}}`}
		m := dsh.MapLog(synth(t, evs...))
		if len(compacted(t, m.Entries)) != 0 || m.Entries[len(m.Entries)-1].Kind != core.KindHarnessEvent {
			t.Fatalf("entries %+v", m.Entries)
		}
	})
}

// TestReplaceIsPositional: a replace names current surface nodes and covers
// the nodes between them by position, so a second compaction can replace the
// first one's checkpoint message (seq 7) through a retained older node
// (seq 4), a span that is empty as a seq range.
func TestReplaceIsPositional(t *testing.T) {
	evs := append([]string{u1, a2, u3, a4}, bracket("c1", 5, "null", 1, 3, 30)...) // surface: 7, 4
	evs = append(evs, bracket("c2", 9, "null", 7, 4, 8)...)                        // surface: 11
	m := dsh.MapLog(synth(t, evs...))
	if !reflect.DeepEqual(m.Surface, []int64{11}) {
		t.Fatalf("surface = %v, want [11]", m.Surface)
	}
	cs := compacted(t, m.Entries)
	if len(cs) != 2 {
		t.Fatalf("%d compacted", len(cs))
	}
	var raw struct{ Replaces []string }
	_ = json.Unmarshal(cs[1].Raw, &raw)
	if !reflect.DeepEqual(raw.Replaces, []string{"session-x#7", "session-x#4"}) {
		t.Errorf("second compaction replaces %v", raw.Replaces)
	}
	// Start and end that name no node are surface indices.
	idx := append([]string{u1, a2, u3}, `{"type":"user/message","seq":4,"data":{"content":[{"type":"text","text":"merged"}],"source":{"kind":"user"}},"surfaceOp":{"op":"replace","start":0,"end":1}}`)
	m = dsh.MapLog(synth(t, idx...))
	if !reflect.DeepEqual(m.Surface, []int64{4, 3}) {
		t.Errorf("index replace: surface = %v, want [4 3]", m.Surface)
	}
	last := m.Entries[len(m.Entries)-1]
	if last.Kind != core.KindUserMessage || !strings.Contains(string(last.Payload), `"replaces":["session-x#1","session-x#2"]`) {
		t.Errorf("replacing message: %s %s", last.Kind, last.Payload)
	}
}

func TestUnknownEventsKeptAsData(t *testing.T) {
	m := dsh.MapLog(synth(t, u1,
		`{"type":"future/thing","seq":2,"data":{"x":1}}`,
		`{"type":"future/ignorable","seq":3,"data":{},"ignorable":true}`,
		`{"type":"assistant/chunk","seq":4,"data":{}}`))
	if len(m.Entries) != 2 || m.Entries[1].Kind != core.KindHarnessEvent || !strings.Contains(string(m.Entries[1].Payload), `"future/thing"`) {
		t.Fatalf("entries: %+v", m.Entries)
	}
	checkEntries(t, m.Entries)
}
