package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

func createFake(t *testing.T, c *client) string {
	t.Helper()
	s, err := c.SessionCreate(t.Context(), schema.SessionCreateParams{Harness: "fake", Cwd: t.TempDir(), Title: "e2e"})
	if err != nil || s.SessionID == "" || s.Harness != "fake" {
		t.Fatalf("session/create = %+v, %v", s, err)
	}
	return s.SessionID
}

// prompt is a prompt of one text block.
func prompt(text string) []schema.Content {
	return []schema.Content{{Type: "text", Text: text}}
}

// payloadAs decodes an entry's payload as P strictly: every member P
// always writes (a JSON tag without omitempty or omitzero), in P and in the
// structs it holds, must be in it, as a test reading a map would have
// found it.
func payloadAs[P any](t testing.TB, e schema.Entry) P {
	t.Helper()
	if missing := missingMembers(e.Payload, reflect.TypeFor[P]()); missing != "" {
		t.Fatalf("payload of %s %s lacks %q: %s", e.Kind, e.ID, missing, e.Payload)
	}
	var p P
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatalf("payload of %s %s as %T: %v", e.Kind, e.ID, p, err)
	}
	return p
}

// missingMembers names the first member that rt always writes and the JSON
// object raw lacks ("" when none is missing, or raw is not an object).
func missingMembers(raw json.RawMessage, rt reflect.Type) string {
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	var members map[string]json.RawMessage
	if rt.Kind() != reflect.Struct || json.Unmarshal(raw, &members) != nil {
		return ""
	}
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		m, ok := members[name]
		if !ok && !strings.Contains(opts, "omit") {
			return name
		}
		if ok {
			if missing := missingMembers(m, f.Type); missing != "" {
				return name + "." + missing
			}
		}
	}
	return ""
}

// must fails t with what when err is set.
func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestLifecycle(t *testing.T) {
	c := startBridge(t, t.TempDir())
	ctx := t.Context()
	if _, err := c.SessionList(ctx, schema.SessionListParams{}); rpctest.AsError(err) == nil || rpctest.AsError(err).Code != -32002 {
		t.Fatalf("request before initialize: %v, want -32002", err)
	}
	c.initialize(nil)
	if _, err := c.Initialize(ctx, schema.InitializeParams{}); rpctest.AsError(err) == nil || rpctest.AsError(err).Code != -32600 {
		t.Fatalf("second initialize: %v, want -32600", err)
	}
	_, err := c.SessionList(ctx, schema.SessionListParams{})
	must(t, "session/list", err)
	must(t, "shutdown", c.Shutdown(ctx))
	must(t, "shutdown again", c.Shutdown(ctx)) // idempotent
	if _, err := c.SessionList(ctx, schema.SessionListParams{}); rpctest.AsError(err) == nil || rpctest.AsError(err).Code != -32600 {
		t.Fatalf("request after shutdown: %v, want -32600", err)
	}
	if code := c.exit(false); code != 0 {
		t.Fatalf("exit after shutdown: code %d, want 0", code)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	c := startBridge(t, t.TempDir())
	c.initialize(nil)
	if code := c.exit(false); code != 1 {
		t.Fatalf("exit without shutdown: code %d, want 1", code)
	}
}

func TestErrors(t *testing.T) {
	c := startBridge(t, t.TempDir(), "BRIDGE_MAX_CONTENT_LENGTH=4096")
	c.initialize(nil)

	// A malformed body is answered with -32700 and id null; the
	// connection carries on.
	c.WriteBody([]byte(`{"jsonrpc":"2.0","id":77,"method":`))
	m := c.Reply("null")
	if m.Error == nil || m.Error.Code != -32700 {
		t.Fatalf("malformed JSON: %+v, want -32700", m)
	}
	_, err := c.SessionList(t.Context(), schema.SessionListParams{})
	must(t, "session/list", err)

	// A body over the limit is refused and skipped.
	big := `{"jsonrpc":"2.0","id":78,"method":"session/list","params":{"cursor":"` + strings.Repeat("x", 10000) + `"}}`
	c.WriteBody([]byte(big))
	m = c.Reply("null")
	if m.Error == nil || (m.Error.Code != -32600 && m.Error.Code != -32700) || !strings.Contains(strings.ToLower(m.Error.Message), "limit") {
		t.Fatalf("oversized body: %+v, want a refusal naming the limit", m.Error)
	}
	_, err = c.SessionList(t.Context(), schema.SessionListParams{})
	must(t, "session/list", err)

	// Bad input goes as raw JSON: the typed client cannot send it.
	if e := c.call("no/such", json.RawMessage(`{}`), nil); e == nil || e.Code != -32601 {
		t.Fatalf("unknown method: %+v, want -32601", e)
	}
	e := c.call("session/create", json.RawMessage(`{"cwd":"/tmp"}`), nil)
	if e == nil || e.Code != -32602 || !strings.Contains(e.Message, "harness") {
		t.Fatalf("missing harness: %+v, want -32602 naming harness", e)
	}
	e = c.call("session/history", json.RawMessage(`{"sessionId":12}`), nil)
	if e == nil || e.Code != -32602 || !strings.Contains(e.Message, "sessionId") {
		t.Fatalf("wrong type: %+v, want -32602 naming sessionId", e)
	}
	_, err = c.SessionHistory(t.Context(), schema.SessionHistoryParams{SessionID: "s_missing"})
	if e := rpctest.AsError(err); e == nil || e.DataCode() != "not_found" {
		t.Fatalf("unknown session: %v, want data.code not_found", err)
	}
	_, err = c.SessionCreate(t.Context(), schema.SessionCreateParams{Harness: "nope", Cwd: "/tmp"})
	if e := rpctest.AsError(err); e == nil || e.DataCode() != "unavailable" {
		t.Fatalf("unknown harness: %v, want data.code unavailable", err)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestSliceOverFake: create, prompt, the session/update stream, history,
// rename, cancel, archive and list over the fake harness, on both stores.
func TestSliceOverFake(t *testing.T) { eachStore(t, testSliceOverFake) }

func testSliceOverFake(t *testing.T, st storeKind) {
	dir := st.dataDir(t, nil)
	c := startBridge(t, dir)
	c.initialize(nil)
	sid := createFake(t, c)

	ctx := t.Context()
	pr, err := c.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: sid, Content: prompt("say hello there\ntool ls /tmp\nfile src/a.go")})
	must(t, "session/prompt", err)
	if pr.StopReason != "end_turn" {
		t.Fatalf("stopReason %q", pr.StopReason)
	}
	kinds := map[string]int{}
	for _, u := range rpctest.Notes(c.Client, schema.NoticeSessionUpdate) {
		if u.SessionID != sid {
			t.Fatalf("session/update of %s, want %s", u.SessionID, sid)
		}
		kinds[u.Entry.Kind]++
	}
	for _, k := range []string{"user.message", "assistant.message", "tool.started", "tool.completed", "artifact.created"} {
		if kinds[k] == 0 {
			t.Errorf("no session/update with a %s entry (got %v)", k, kinds)
		}
	}

	hist, err := c.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: sid})
	must(t, "session/history", err)
	if len(hist.Entries) < 5 || hist.HasMore {
		t.Fatalf("history: %d entries, hasMore %v", len(hist.Entries), hist.HasMore)
	}
	for i := 1; i < len(hist.Entries); i++ {
		if hist.Entries[i].ParentID != hist.Entries[i-1].ID || hist.Entries[i].Seq <= hist.Entries[i-1].Seq {
			t.Fatalf("history is not a chain in order at %d: %+v", i, hist.Entries[i])
		}
	}
	// Around an entry and forwards, over the wire; the old request's
	// result has no hasNewer.
	if hist.HasNewer != nil {
		t.Fatalf("a backwards page carries hasNewer %v", *hist.HasNewer)
	}
	mid := hist.Entries[2]
	around, err := c.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: sid, Around: mid.ID, MaxMessages: 2})
	must(t, "session/history around", err)
	if !slices.ContainsFunc(around.Entries, func(e schema.Entry) bool { return e.ID == mid.ID }) || around.HasNewer == nil {
		t.Fatalf("around %s: %+v", mid.ID, around)
	}
	after, err := c.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: sid, AfterSeq: &hist.Entries[0].Seq})
	must(t, "session/history afterSeq", err)
	if len(after.Entries) != len(hist.Entries)-1 || after.Entries[0].ID != hist.Entries[1].ID || after.HasNewer == nil || *after.HasNewer {
		t.Fatalf("after seq %d: %d entries, hasNewer %v; want the %d after it, none newer", hist.Entries[0].Seq, len(after.Entries), after.HasNewer, len(hist.Entries)-1)
	}
	_, err = c.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: sid, Around: mid.ID, BeforeSeq: &mid.Seq})
	if e := rpctest.AsError(err); e == nil || e.Code != -32602 || e.ErrorData().Field != "around" {
		t.Fatalf("around with beforeSeq: %v, want -32602 naming around", err)
	}
	_, err = c.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: sid, Around: "e_missing"})
	if e := rpctest.AsError(err); e == nil || e.DataCode() != "not_found" {
		t.Fatalf("around an unknown entry: %v, want data.code not_found", err)
	}
	if !strings.Contains(string(hist.Entries[0].Payload), "say hello there") {
		t.Fatalf("first entry should be the user's message: %s", hist.Entries[0].Payload)
	}

	_, err = c.SessionRename(ctx, schema.SessionRenameParams{SessionID: sid, Title: "renamed"})
	must(t, "session/rename", err)
	list, err := c.SessionList(ctx, schema.SessionListParams{})
	must(t, "session/list", err)
	if len(list.Items) != 1 || list.Items[0].Title != "renamed" {
		t.Fatalf("list after rename: %+v", list.Items)
	}
	_, err = c.SessionCancel(ctx, schema.SessionCancelParams{SessionID: sid}) // idle: not an error
	must(t, "session/cancel", err)
	_, err = c.SessionArchive(ctx, schema.SessionArchiveParams{SessionID: sid})
	must(t, "session/archive", err)
	list, err = c.SessionList(ctx, schema.SessionListParams{})
	must(t, "session/list", err)
	if len(list.Items) != 0 {
		t.Fatalf("archived session still listed by default: %+v", list.Items)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestCancelAndConcurrency: a slow prompt never blocks a fast request, and
// $/cancelRequest ends it, on both stores.
func TestCancelAndConcurrency(t *testing.T) { eachStore(t, testCancelAndConcurrency) }

func testCancelAndConcurrency(t *testing.T, st storeKind) {
	c := startBridge(t, st.dataDir(t, nil))
	c.initialize(nil)
	sid := createFake(t, c)
	sid2 := createFake(t, c)
	for _, id := range []schema.RequestID{schema.NumberID(9001), schema.StringID("slow-one")} {
		rawID := string(mustJSON(id))
		target := sid
		if id.IsString {
			target = sid2
		}
		c.Send(id, "session/prompt", schema.SessionPromptParams{SessionID: target, Content: prompt("hang")})
		// A slow request never blocks a fast one.
		_, err := c.SessionList(t.Context(), schema.SessionListParams{})
		must(t, "session/list", err)
		c.Notify(schema.NoticeCancelRequest.Name, schema.CancelParams{ID: id})
		m := c.Reply(rawID)
		if m.Error == nil || m.Error.Code != -32800 {
			t.Fatalf("cancelled request %s: %+v, want -32800", rawID, m)
		}
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestPlainBridgeServes: `bridge` with stdin not a terminal is `bridge serve`.
func TestPlainBridgeServes(t *testing.T) {
	c := startProcess(t, exec.Command(binPath), "BRIDGE_DATA_DIR="+t.TempDir())
	c.initialize(nil)
	_, err := c.SessionList(t.Context(), schema.SessionListParams{})
	must(t, "session/list", err)
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestDataDirFromInitialize: with no flag or variable, the client's
// initializationOptions.dataDir is the data directory.
func TestDataDirFromInitialize(t *testing.T) {
	dir, xdg := t.TempDir(), t.TempDir()
	c := startProcess(t, exec.Command(binPath, "serve"), "BRIDGE_DATA_DIR=", "XDG_DATA_HOME="+xdg)
	c.initialize(&schema.InitializationOptions{DataDir: dir})
	rep, err := c.BridgeDoctor(t.Context(), schema.DoctorParams{Harness: "fake"})
	must(t, "bridge/doctor", err)
	if rep.DataDir != dir {
		t.Fatalf("dataDir %q, want %q", rep.DataDir, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(xdg, "bridge")); err == nil {
		t.Fatal("the XDG default was created although the client named a data directory")
	}
	c.exit(true)
}

// TestWorkDoneProgressCancelStopsPrompt: the cancel button of a progress
// (window/workDoneProgress/cancel) stops the running prompt, and the
// session takes the next prompt.
func TestWorkDoneProgressCancelStopsPrompt(t *testing.T) {
	c := startBridge(t, t.TempDir())
	c.initialize(nil)
	sid := createFake(t, c)
	token := schema.StringToken("p-1")
	c.Send(4242, "session/prompt", schema.SessionPromptParams{SessionID: sid, WorkDoneProgressParams: schema.WorkDoneProgressParams{WorkDoneToken: &token}, Content: prompt("hang")})
	rpctest.Await(c.Client, schema.NoticeProgress, func(p schema.ProgressParams) bool {
		return p.Token == token && p.Value.Kind == schema.ProgressBegin
	})
	c.Notify("window/workDoneProgress/cancel", schema.WorkDoneProgressCancelParams{Token: token})
	if m := c.Reply(`4242`); m.Error == nil || m.Error.Code != -32800 {
		t.Fatalf("prompt after its progress was cancelled: %+v, want -32800", m)
	}
	rpctest.Await(c.Client, schema.NoticeProgress, func(p schema.ProgressParams) bool {
		return p.Token == token && p.Value.Kind == schema.ProgressEnd && p.Value.Message == "cancelled"
	})
	_, err := c.SessionPrompt(t.Context(), schema.SessionPromptParams{SessionID: sid, Content: prompt("again")})
	must(t, "session/prompt", err)
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestPayloadAsRequiresMembers: payloadAs fails on a payload that lacks a
// member its type always writes, here and in a struct it holds, and takes
// one that omits only omitempty members.
func TestPayloadAsRequiresMembers(t *testing.T) {
	type usage struct {
		InputTokens int64 `json:"inputTokens"`
		Cached      int64 `json:"cached,omitempty"`
	}
	type payload struct {
		Allowed bool   `json:"allowed"`
		By      string `json:"by,omitempty"`
		Usage   *usage `json:"usage,omitempty"`
	}
	rt := reflect.TypeFor[payload]()
	for raw, want := range map[string]string{
		`{"allowed":false}`:                          "",
		`{"allowed":true,"usage":{"inputTokens":3}}`: "",
		`{"by":"user"}`:                              "allowed",
		`{"allowed":true,"usage":{"cached":1}}`:      "usage.inputTokens",
	} {
		if got := missingMembers(json.RawMessage(raw), rt); got != want {
			t.Errorf("missingMembers(%s) = %q, want %q", raw, got, want)
		}
	}
}
