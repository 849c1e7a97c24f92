package codex

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func TestImportManualCompactionRollout(t *testing.T) {
	h := New(Config{})
	path := testdata(t, "rollout-manual-compact.recorded.jsonl")
	var calls int
	s, err := h.Import(ctxT(t), path, func(done, total int64) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if s.NativeID != recordedThread || s.Cwd != "/home/user/project" || s.Model != "mock-model" || s.Title != "hello" {
		t.Errorf("session = %+v", s)
	}
	if calls == 0 {
		t.Error("progress never called")
	}
	var kinds []string
	for _, e := range s.Entries {
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, " "); got != "user.message assistant.message usage.reported context.compacted usage.reported" {
		t.Errorf("kinds = %s", got)
	}
	// The native ids are the ones the live mapping gives the same items
	// (see TestReplayTurnAndManualCompaction), so live + import adds nothing.
	wantIDs := []string{"01a22a77-448a-7c03-8429-6fcc7e2009b7", "msg_1", "usage:01a22a77-4420-7d33-8052-5cb8fedf9af7",
		"01a22a77-4563-76a2-9cfe-2bfe4bff70f1", "usage:01a22a77-4550-7513-8e49-fabe3fb939c6"}
	for i, e := range s.Entries {
		if e.NativeID != wantIDs[i] {
			t.Errorf("entry %d NativeID = %q, want %q", i, e.NativeID, wantIDs[i])
		}
	}
	cp := compactedOf(t, s.Entries[3])
	if cp.Trigger != core.TriggerManual || !strings.HasSuffix(cp.Summary, "reply 2") || !cp.Estimated ||
		cp.PreTokens == nil || *cp.PreTokens != 1010 || cp.PostTokens == nil || *cp.PostTokens != 6046 {
		t.Errorf("compacted = %s", s.Entries[3].Payload)
	}
	if strings.Contains(string(cp.Raw), "replacement_history\"") {
		t.Error("raw keeps the whole replacement history")
	}
	checkEntries(t, s.Entries)
	again, err := h.Import(ctxT(t), path, nil)
	if err != nil || !reflect.DeepEqual(again.Entries, s.Entries) {
		t.Errorf("second import differs: %v", err)
	}
}

func TestImportToolsRollout(t *testing.T) {
	s, err := New(Config{}).Import(ctxT(t), testdata(t, "rollout-tools.recorded.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range s.Entries {
		kinds = append(kinds, string(e.Kind)+"="+e.NativeID)
	}
	want := []string{"tool.started=call_echo_1:started", "tool.completed=call_echo_1:completed",
		"tool.started=call_patch_1:started", "tool.completed=call_patch_1:completed",
		"artifact.created=call_patch_1:/home/user/project/notes/hello.txt"}
	got := strings.Join(kinds, " ")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %s in %s", w, got)
		}
	}
	if n := strings.Count(got, "user.message="); n != 2 {
		t.Errorf("user messages = %d in %s", n, got)
	}
	checkEntries(t, s.Entries)
}

func TestImportBadInput(t *testing.T) {
	h := New(Config{})
	if _, err := h.Import(ctxT(t), filepath.Join(t.TempDir(), "missing.jsonl"), nil); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	if _, err := h.Import(ctxT(t), empty, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("empty file: %v", err)
	}
	mixed := filepath.Join(t.TempDir(), "mixed.jsonl")
	os.WriteFile(mixed, []byte(`{"type":"session_meta","payload":{"id":"th-1","cwd":"/w"}}
{not json
{"type":"event_msg","ordinal":3,"payload":{"type":"item_completed","turn_id":"t","item":{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"hi"}]}}}
{"type":"compacted","ordinal":4,"payload":{"message":"older summary"}}
`), 0o600)
	s, err := h.Import(ctxT(t), mixed, nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range s.Entries {
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, " "); got != "harness.event user.message context.compacted" {
		t.Errorf("kinds = %s", got)
	}
	if cp := compactedOf(t, s.Entries[2]); cp.Trigger != core.TriggerUnknown || cp.Summary != "older summary" {
		t.Errorf("compacted line without item = %s", s.Entries[2].Payload)
	}
	checkEntries(t, s.Entries)
}
