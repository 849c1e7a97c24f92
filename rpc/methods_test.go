package rpc

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/service"
	"github.com/bridge-dev/bridge/schema"
)

// TestHistoryResultMatchesSchema keeps the fast history encoding equal to
// schema.SessionHistoryResult's, field for field and byte for byte.
func TestHistoryResultMatchesSchema(t *testing.T) {
	fields := func(t reflect.Type) []string {
		var out []string
		for f := range t.Fields() {
			out = append(out, f.Name+" "+f.Type.String()+" "+string(f.Tag))
		}
		return out
	}
	got := fields(reflect.TypeFor[historyResult]())
	want := fields(reflect.TypeFor[schema.SessionHistoryResult]())
	want[0] = "Entries []rpc.plainEntry " + want[0][len("Entries []schema.Entry "):]
	if !reflect.DeepEqual(got, want) {
		t.Errorf("historyResult fields %v, schema has %v", got, want)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, entries := range [][]core.Entry{nil, {
		{ID: "a", SessionID: "s", Seq: 1, Kind: core.KindUserMessage, Payload: json.RawMessage(`{"text": "hi"}`), CreatedAt: at},
		{ID: "b", SessionID: "s", ParentID: "a", Seq: 2, Kind: "future.kind", NativeID: "n", TokenEstimate: 9, CreatedAt: at},
	}} {
		fast := historyResult{Entries: make([]plainEntry, len(entries)), HasMore: true}
		slow := schema.SessionHistoryResult{HasMore: true}
		for i, e := range entries {
			fast.Entries[i] = plainEntry(service.WireEntry(e))
			slow.Entries = append(slow.Entries, schema.Entry{ID: e.ID, SessionID: e.SessionID, ParentID: e.ParentID, Seq: e.Seq,
				Kind: string(e.Kind), Payload: e.Payload, NativeID: e.NativeID, TokenEstimate: e.TokenEstimate, CreatedAt: e.CreatedAt})
		}
		a, err := json.Marshal(fast)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(slow)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("encodings differ:\nrpc    %s\nschema %s", a, b)
		}
	}
}
