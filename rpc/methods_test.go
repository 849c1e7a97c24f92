package rpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// TestHistoryResultMatchesSchema keeps the hand-written history encoding
// equal to json.Marshal of schema.SessionHistoryResult, as a JSON value:
// every member, optional ones absent or present, strings that need
// escaping, payloads compact or not, and a payload that is not JSON fails
// the page as it fails json.Marshal.
func TestHistoryResultMatchesSchema(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, entries := range [][]core.Entry{nil, {
		{ID: "a", SessionID: "s", Seq: 1, Kind: core.KindUserMessage, Payload: json.RawMessage(`{"text": "hi"}`), CreatedAt: at},
		{ID: "b", SessionID: "s", ParentID: "a", Seq: 2, Kind: "future.kind", NativeID: "n", TokenEstimate: 9, CreatedAt: at},
		{ID: "c", SessionID: "s", ParentID: "b", Seq: 3, Kind: core.KindAssistantMessage, CreatedAt: at.In(time.FixedZone("x", 3600)),
			Payload: json.RawMessage(`{"text":"<b>&amp; \u00e9 \"q\" \u2028","n":[1,-2.5e+3,true,null,{}]}`)},
		{ID: "d\"<é>", SessionID: "s", Seq: 4, Kind: "k\n", NativeID: "\u2028", Payload: json.RawMessage(" \n[ 1 , {\"a\" : \"b\"} ]\t"),
			CreatedAt: time.Time{}},
	}} {
		for _, newer := range []*bool{nil, core.Ptr(false), core.Ptr(true)} {
			slow := schema.SessionHistoryResult{HasMore: true, Entries: []schema.Entry{}, HasNewer: newer}
			for _, e := range entries {
				slow.Entries = append(slow.Entries, peer.WireEntry(e))
			}
			a, err := appendHistory(nil, slow)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(slow)
			if err != nil {
				t.Fatal(err)
			}
			var av, bv any
			if err := json.Unmarshal(a, &av); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, a)
			}
			if err := json.Unmarshal(b, &bv); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(av, bv) {
				t.Errorf("encodings differ:\nrpc    %s\nschema %s", a, b)
			}
			if newer == nil && bytes.Contains(a, []byte("hasNewer")) {
				t.Errorf("a backwards page carries hasNewer: %s", a)
			}
		}
	}
	bad := schema.SessionHistoryResult{Entries: []schema.Entry{{ID: "x", Payload: json.RawMessage(`{"a":`), CreatedAt: at}}}
	if _, err := json.Marshal(bad); err == nil {
		t.Fatal("json.Marshal accepted a broken payload")
	}
	if _, err := appendHistory(nil, bad); err == nil || !strings.Contains(err.Error(), "entry x: payload") {
		t.Errorf("broken payload: err = %v", err)
	}
	late := schema.SessionHistoryResult{Entries: []schema.Entry{{ID: "y", Payload: json.RawMessage(`{}`), CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	if _, err := appendHistory(nil, late); err == nil {
		t.Error("a year past 9999 was encoded (json.Marshal refuses it)")
	}
}

// TestIsCompactJSON: the check that lets a payload be copied as it is
// agrees with encoding/json (valid, and unchanged by compacting) on
// hand-picked values and on every prefix and one-byte change of them.
func TestIsCompactJSON(t *testing.T) {
	seeds := []string{`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `-12E+7`, `true`, `false`, `null`,
		`{"a":[1,2,{"b":null}],"c":"\u00e9\n\"\\\/"}`, `[[[[]]]]`, `{"text":"é ☃ \ud83d\ude00"}`,
		`01`, `1.`, `.5`, `-`, `1e`, `"\x"`, `"\u12g4"`, "\"a\tb\"", `{"a" :1}`, `[1 ]`, ` {}`, `{}x`, `{"a":1,}`, `[,]`, `tru`, `nul`}
	check := func(b []byte) {
		want := false
		if json.Valid(b) {
			var buf bytes.Buffer
			json.Compact(&buf, b) //nolint:errcheck // valid
			want = bytes.Equal(buf.Bytes(), b)
		}
		if got := isCompactJSON(b); got != want {
			t.Errorf("isCompactJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
	}
	for _, s := range seeds {
		b := []byte(s)
		for i := 0; i <= len(b); i++ {
			check(b[:i])
		}
		for i := range b {
			for _, c := range []byte{' ', '"', '\\', '0', '-', 'e', '.', ',', ':', '{', '}', '[', ']', 'a', 0x01, 0xff} {
				m := append([]byte(nil), b...)
				m[i] = c
				check(m)
			}
		}
	}
	deep := bytes.Repeat([]byte("["), maxDepth+5)
	if isCompactJSON(append(deep, bytes.Repeat([]byte("]"), maxDepth+5)...)) {
		t.Error("nesting deeper than encoding/json accepts was accepted")
	}
}
