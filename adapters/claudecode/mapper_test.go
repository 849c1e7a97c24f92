package claudecode

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
)

const (
	recordedStream     = "stream-json-session.recorded.txt"
	recordedTranscript = "transcript-with-compact-boundary.recorded.jsonl"
	recordedSession    = "a3edcc62-5436-4b34-8ea1-4bd239b73459"
	recordedBoundary   = "afc41b70-75df-41bb-924c-a2fffb9527f8"
)

func testdata(t testing.TB, name string) string {
	return filepath.Join(adaptertest.RepoRoot(t), "testdata", "claude-code", name)
}

// recordedOutput returns the stdout lines ("<< ") of each recorded run,
// keyed by the run's file name (s1.jsonl, s4-resume-missing.jsonl…).
func recordedOutput(t testing.TB) map[string][][]byte {
	f, err := os.Open(testdata(t, recordedStream))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][][]byte{}
	cur := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "### file: "); ok {
			cur = strings.Fields(name)[0]
			continue
		}
		if l, ok := strings.CutPrefix(line, "<< "); ok && cur != "" {
			out[cur] = append(out[cur], []byte(l))
		}
	}
	return out
}

// mapLines maps recorded lines through the live path's decoder.
func mapLines(t *testing.T, lines [][]byte) []core.Event {
	var evs []core.Event
	for _, raw := range lines {
		var m streamMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("recorded line is not JSON: %v", err)
		}
		evs = append(evs, mapStream(&m, raw)...)
	}
	return evs
}

func entriesOf(evs []core.Event) []core.NewEntry {
	var out []core.NewEntry
	for _, ev := range evs {
		if ev.Entry != nil {
			out = append(out, *ev.Entry)
		}
	}
	return out
}

func TestMapRecordedSession(t *testing.T) {
	t.Parallel()
	runs := recordedOutput(t)
	evs := mapLines(t, runs["s1.jsonl"])
	var ids, models []string
	for _, ev := range evs {
		if ev.NativeSessionID != "" {
			ids = append(ids, ev.NativeSessionID)
			models = append(models, ev.Model)
		}
	}
	if len(ids) != 3 || ids[0] != recordedSession || models[0] != "claude-opus-5-5" {
		t.Errorf("init events: ids %v models %v", ids, models)
	}
	es := entriesOf(evs)
	checkNativeIDsUnique(t, es)
	var kinds []string
	for _, e := range es {
		k := string(e.Kind)
		if e.Kind == core.KindSessionStatus || e.Kind == core.KindHarnessEvent {
			p := payload(t, e)
			if s, ok := p["status"].(string); ok {
				k += "(" + s + ")"
			} else {
				k += "(" + p["type"].(string) + ")"
			}
		}
		kinds = append(kinds, k)
	}
	want := "assistant.message session.status(turn_completed) usage.reported assistant.message session.status(turn_completed) usage.reported " +
		"session.status(compacting) session.status(compact_success) context.compacted harness.event(compact_summary) " +
		"harness.event(local_command) session.status(turn_completed) usage.reported"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds:\n got %s\nwant %s", got, want)
	}
	for _, e := range es {
		if e.Kind == core.KindAssistantMessage && payload(t, e)["text"] == "reply 3" {
			if !strings.HasSuffix(e.NativeID, ":0") {
				t.Errorf("assistant block native id %q lacks the block index", e.NativeID)
			}
		}
	}
}

func TestMapCompactBoundary(t *testing.T) {
	t.Parallel()
	var line []byte
	for _, l := range recordedOutput(t)["s1.jsonl"] {
		if strings.Contains(string(l), `"compact_boundary"`) {
			line = l
		}
	}
	es := entriesOf(mapLines(t, [][]byte{line}))
	if len(es) != 1 || es[0].Kind != core.KindContextCompacted || es[0].NativeID != recordedBoundary {
		t.Fatalf("entries: %+v", es)
	}
	var c core.Compacted
	if err := json.Unmarshal(es[0].Payload, &c); err != nil {
		t.Fatal(err)
	}
	if c.Harness != "claude-code" || c.Trigger != "manual" || c.PreTokens == nil || *c.PreTokens != 15007 ||
		c.PostTokens == nil || *c.PostTokens != 2588 {
		t.Errorf("compacted = %+v", c)
	}
	if string(c.Raw) != string(line) {
		t.Errorf("raw is not the whole line")
	}
	// Without post_tokens (older CLIs) and with an unknown trigger.
	es = entriesOf(mapLines(t, [][]byte{[]byte(`{"type":"system","subtype":"compact_boundary","uuid":"u1","compact_metadata":{"trigger":"auto","pre_tokens":990017}}`),
		[]byte(`{"type":"system","subtype":"compact_boundary","uuid":"u2","compact_metadata":{"trigger":"later"}}`),
		[]byte(`{"type":"system","subtype":"compact_boundary","uuid":"u3"}`)}))
	if len(es) != 3 {
		t.Fatalf("entries: %d", len(es))
	}
	c = core.Compacted{}
	json.Unmarshal(es[0].Payload, &c)
	if c.Trigger != "auto" || *c.PreTokens != 990017 || c.PostTokens != nil {
		t.Errorf("auto boundary = %+v", c)
	}
	for _, e := range es[1:] {
		var c core.Compacted
		json.Unmarshal(e.Payload, &c)
		if c.Trigger != "unknown" {
			t.Errorf("trigger = %q, want unknown", c.Trigger)
		}
	}
}

func TestMapFailedResumeAndErrors(t *testing.T) {
	t.Parallel()
	es := entriesOf(mapLines(t, recordedOutput(t)["s4-resume-missing.jsonl"]))
	if len(es) != 1 || es[0].Kind != core.KindSessionStatus {
		t.Fatalf("entries: %+v", es)
	}
	p := payload(t, es[0])
	if p["status"] != "turn_failed" || !strings.Contains(string(es[0].Payload), "No conversation found with session ID: 019a0000") {
		t.Errorf("payload: %s", es[0].Payload)
	}
	var m streamMsg
	json.Unmarshal(recordedOutput(t)["s4-resume-missing.jsonl"][0], &m)
	if got := stopReason(&m, false); got != "error" {
		t.Errorf("stop reason %q", got)
	}
	// Compaction failure status, unknown types and subtypes, tool blocks.
	lines := [][]byte{
		[]byte(`{"type":"system","subtype":"status","status":null,"compact_result":"failed","compact_error":"Not enough messages to compact.","uuid":"s1"}`),
		[]byte(`{"type":"conversation_reset","new_conversation_id":"x","uuid":"r1"}`),
		[]byte(`{"type":"system","subtype":"session_title_changed","title":"T","uuid":"t1"}`),
		[]byte(`{"subtype":"no_type_at_all"}`),
		[]byte(`{"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}`),
		[]byte(`{"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"denied"}]}]}}`),
		[]byte(`{"type":"assistant","uuid":"a2"}`),
	}
	es = entriesOf(mapLines(t, lines))
	checkNativeIDsUnique(t, es)
	got := []string{}
	for _, e := range es {
		got = append(got, string(e.Kind)+" "+e.NativeID)
	}
	want := []string{"session.status s1", "harness.event r1", "harness.event t1", "harness.event " + lineID(lines[3]),
		"harness.event a1:0", "tool.started a1:1", "tool.completed u1:0", "harness.event a2"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if p := payload(t, es[0]); p["status"] != "compact_failed" || p["compactError"] != "Not enough messages to compact." {
		t.Errorf("failed compaction status: %v", p)
	}
	if p := payload(t, es[1]); p["type"] != "conversation_reset" || p["raw"] == nil {
		t.Errorf("unknown type not kept whole: %v", p)
	}
	if p := payload(t, es[6]); p["toolId"] != "toolu_1" || p["isError"] != true || p["output"] != "denied" {
		t.Errorf("tool result: %v", p)
	}
}

func TestImportRecordedTranscript(t *testing.T) {
	t.Parallel()
	h := New(Config{ConfigDir: t.TempDir()})
	ctx := context.Background()
	var calls int
	is, err := h.Import(ctx, testdata(t, recordedTranscript), func(done, total int64) {
		calls++
		if done > total {
			t.Errorf("progress %d of %d", done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Error("no progress reported")
	}
	if is.NativeID != recordedSession || is.Cwd != "/home/user/project" || is.Model != "claude-opus-5-5" {
		t.Errorf("session: id %q cwd %q model %q", is.NativeID, is.Cwd, is.Model)
	}
	checkNativeIDsUnique(t, is.Entries)
	var users []string
	var comps []core.Compacted
	for _, e := range is.Entries {
		switch e.Kind {
		case core.KindUserMessage:
			users = append(users, payload(t, e)["text"].(string))
		case core.KindContextCompacted:
			var c core.Compacted
			json.Unmarshal(e.Payload, &c)
			comps = append(comps, c)
		}
	}
	if strings.Join(users, "|") != "hello|second message|after resume" {
		t.Errorf("user messages %q", users)
	}
	if len(comps) != 1 {
		t.Fatalf("compactions: %d", len(comps))
	}
	c := comps[0]
	if c.NativeID != recordedBoundary || c.Trigger != "manual" || *c.PreTokens != 15007 || *c.PostTokens != 2588 ||
		!strings.Contains(c.Summary, "Mock summary") || !strings.Contains(string(c.Raw), `"compactMetadata"`) {
		t.Errorf("compacted = %+v", c)
	}
	again, err := h.Import(ctx, testdata(t, recordedTranscript), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Entries) != len(is.Entries) {
		t.Fatalf("second import: %d entries, first %d", len(again.Entries), len(is.Entries))
	}
	for i := range again.Entries {
		if again.Entries[i].NativeID != is.Entries[i].NativeID {
			t.Errorf("entry %d native id changed between imports", i)
		}
	}
}

func TestImportStreamJSONAndBadLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	for _, l := range recordedOutput(t)["s1.jsonl"] {
		b.Write(l)
		b.WriteByte('\n')
	}
	b.WriteString("\n{not json at all\n")
	path := filepath.Join(dir, "saved-output.jsonl")
	os.WriteFile(path, []byte(b.String()), 0o644)
	is, err := New(Config{ConfigDir: dir}).Import(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkNativeIDsUnique(t, is.Entries)
	var comp *core.Compacted
	var malformed int
	for _, e := range is.Entries {
		if e.Kind == core.KindContextCompacted {
			comp = new(core.Compacted)
			json.Unmarshal(e.Payload, comp)
			if e.NativeID != recordedBoundary {
				t.Errorf("stream boundary id %q differs from the transcript's", e.NativeID)
			}
		}
		if e.Kind == core.KindHarnessEvent && payload(t, e)["type"] == "malformed" {
			malformed++
		}
	}
	if comp == nil || comp.Trigger != "manual" || !strings.Contains(comp.Summary, "Mock summary #4") {
		t.Errorf("compacted = %+v", comp)
	}
	if malformed != 1 {
		t.Errorf("malformed lines kept: %d", malformed)
	}
	if is.NativeID != recordedSession || is.Model != "claude-opus-5-5" {
		t.Errorf("session %q model %q", is.NativeID, is.Model)
	}
	_, err = New(Config{}).Import(context.Background(), filepath.Join(dir, "missing.jsonl"), nil)
	if core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("missing file: %v", err)
	}
}

func TestProjectDirName(t *testing.T) {
	t.Parallel()
	if got := projectDirName("/home/user/my.project_x"); got != "-home-user-my-project-x" {
		t.Errorf("got %q", got)
	}
}
