package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestE2EDSH drives the real DeepSeek Harness through the bridge binary:
// doctor, a turn, /compact (one session/contextCompacted carrying DSH's
// gauge as preTokens and its shadowedTokenCount as shadowedTokens), then, with both DSH and bridge restarted, a native
// resume whose next turn still carries the compacted conversation, and the
// session log DSH wrote imported with `bridge import`.
func TestE2EDSH(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{DSH: true})
	h.onText("compaction engine", "SUMMARY-55837: the user wants port 55837 in internal/server/listen.go.")
	h.onText("port 55837", "Noted, port 55837.")
	h.onText("what port", "Port 55837, as you said.")

	c := h.start(t)
	doc := rpctest.Must(c.Client, c.BridgeDoctor, schema.DoctorParams{Harness: "dsh"})
	if len(doc.Adapters) != 1 || !doc.Adapters[0].OK || doc.Adapters[0].Version == "" {
		t.Fatalf("bridge/doctor dsh = %+v", doc)
	}

	sid := h.create(t, c, "dsh", "port")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")
	cr := rpctest.Must(c.Client, c.SessionCompact, schema.SessionCompactParams{SessionID: sid})
	if cr.By != "harness" {
		t.Fatalf("session/compact = %+v, want by harness", cr)
	}
	note := rpctest.Await(c.Client, schema.NoticeContextCompacted, func(n schema.ContextCompactedNotification) bool { return n.SessionID == sid })
	if note.Harness != "dsh" || note.Trigger != schema.TriggerManual || note.PreTokens == nil || *note.PreTokens <= 0 ||
		note.ShadowedTokens == nil || *note.ShadowedTokens <= 0 {
		t.Errorf("session/contextCompacted = %+v, want dsh, manual, preTokens from DSH's gauge and shadowedTokens from its shadowedTokenCount", note)
	}
	if n := len(c.Sent("session/contextCompacted")); n != 1 {
		t.Errorf("%d session/contextCompacted notifications, want 1", n)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("bridge exit code %d", code)
	}

	// DSH restarts (same DSH_HOME, same port); a new bridge resumes the
	// session natively, and its next turn carries the compacted summary.
	h.dsh.Restart()
	db := h.openDB(t)
	native := sessionNative(t, db, sid)
	c = h.start(t)
	res, rn := resume(t, c, sid)
	if res.Mode != "native" || rn.Mode != "native" || res.NativeError != "" {
		t.Fatalf("session/resume after a DSH restart = %+v (note %+v), want native", res, rn)
	}
	before := len(h.fake.Requests())
	say(t, c, sid, "Remind me: what port?")
	var turn []string
	for _, r := range h.requestsSince(before) {
		if strings.Contains(r.LastUserText, "what port") {
			turn = append(turn, requestText(r))
		}
	}
	if len(turn) != 1 || !strings.Contains(turn[0], "SUMMARY-55837") {
		t.Errorf("the resumed turn's request (%d found) does not carry the compacted summary", len(turn))
	}
	if got := sessionNative(t, db, sid); got != native {
		t.Errorf("native id after resume %q, want %q", got, native)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("bridge exit code %d", code)
	}

	// The durable log DSH wrote (flushed when it stops) imports into a
	// fresh data directory with its compaction, once.
	h.dsh.Stop()
	log := h.dsh.SessionLog(h.cwd, native)
	dir := t.TempDir()
	var first, second struct {
		SessionID        string `json:"sessionId"`
		Entries          int    `json:"entries"`
		ContextCompacted int    `json:"contextCompacted"`
	}
	for i, out := range []any{&first, &second} {
		stdout, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", "dsh", log, "--json")
		if code != 0 {
			t.Fatalf("bridge import %d: exit %d: %s", i+1, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatalf("bridge import %d: %v: %s", i+1, err, stdout)
		}
	}
	if first.Entries < 4 || first.ContextCompacted != 1 {
		t.Errorf("bridge import of %s = %+v, want the turns and one context.compacted", log, first)
	}
	if second.SessionID != first.SessionID || second.Entries != 0 {
		t.Errorf("second import %+v, want the same session and nothing added", second)
	}
}

// TestE2EMigrateForeignDSHSession migrates a DeepSeek Harness session Bridge
// did not create (made through DSH's own web API, as its browser UI would)
// to Claude Code through the binary: migration/preview names it by its DSH
// id, Bridge folds it from DSH's own history (rc.8 serves no
// historyWindow), the summary worker runs on DSH, and the image the user
// sent without an answer is recovered through DSH's session.attachment and
// goes with the kickoff.
func TestE2EMigrateForeignDSHSession(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{DSH: true})
	h.onText("You write handoffs", workerHandoff)
	h.onText("port 55837", "Understood: port 55837, in internal/server/listen.go.")
	h.on("LOOK AT THIS", func(fakemodel.Request) fakemodel.Reply { return fakemodel.Reply{Status: 400} })
	if err := h.dsh.EnableImages(); err != nil {
		t.Fatal(err)
	}

	// The session is DSH's own: created and prompted through DSH's API.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	host := dsh.New(dsh.Config{BaseURL: h.dsh.URL, PollInterval: 50 * time.Millisecond})
	live, err := host.CreateSession(ctx, core.CreateRequest{Cwd: h.cwd, Title: "port change"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	native := live.NativeID()
	if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "The service must listen on port 55837. The listener lives in internal/server/listen.go."}}); err != nil {
		t.Fatal(err)
	}
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg=="
	// The model fails on the image turn (HTTP 400, which DSH does not
	// retry): the image stays without an answer.
	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "LOOK AT THIS diagram of the listener"}, {Type: "image", MediaType: "image/png", Data: png}})
	if err != nil || res.StopReason == "end_turn" {
		t.Fatalf("the failed image turn: %+v %v", res, err)
	}
	live.Close(ctx)

	c := h.start(t)
	if l := listSessions(t, c, true); len(l) != 0 {
		t.Fatalf("bridge already records %+v", l)
	}
	p := rpctest.Must(c.Client, c.MigrationPreview, schema.MigrationPreviewParams{Source: &schema.MigrationSource{Harness: "dsh", NativeSessionID: native}, Target: schema.MigrationTarget{Harness: "claude-code", Model: "sonnet"}})
	if !strings.Contains(p.Summary, "55837") || len(p.Sections) != 5 {
		t.Fatalf("migration/preview of the DSH session = %+v", p)
	}
	if p.Stats["imagesUnresolved"] != 1 || !strings.Contains(p.Summary, "Unresolved images") {
		t.Errorf("preview stats %v: want the one unanswered image marked unresolved\n%s", p.Stats, p.Summary)
	}
	srcs := listSessions(t, c, false)
	if len(srcs) != 1 || srcs[0].Harness != "dsh" || srcs[0].Title != "port change" {
		t.Fatalf("sessions after the preview: %+v, want the DSH session recorded", srcs)
	}
	var workerReq *fakemodel.Request
	for _, r := range h.fake.Requests() {
		if strings.Contains(r.LastUserText, "You write handoffs") {
			r := r
			workerReq = &r
		}
	}
	if workerReq == nil || workerReq.API != "chat" || !strings.Contains(requestText(*workerReq), "internal/server/listen.go") {
		t.Fatalf("the summary worker did not run on DSH with the folded source")
	}

	before := len(h.fake.Requests())
	x := rpctest.Must(c.Client, c.MigrationExecute, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Inject: "prompt"})
	if !x.KickoffSent || !containsAny(x.Warnings, "recovered from dsh's session.attachment") {
		t.Fatalf("migration/execute = %+v, want the kickoff sent with the image recovered from DSH", x)
	}
	var kick *fakemodel.Request
	for _, r := range h.requestsSince(before) {
		if r.API == "anthropic" && strings.Contains(requestText(r), "55837") {
			r := r
			kick = &r
			break
		}
	}
	if kick == nil || !strings.Contains(string(kick.Body), png) {
		t.Fatalf("the target's kickoff request does not carry the recovered image")
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// TestMigrateForeignDSHSessionWindow: where DSH serves
// session.historyWindow (a DSH newer than rc.8, played by the fake DSH web
// server), a session Bridge did not create is folded from one window read
// carrying the whole budget (240 messages), never paged through
// session.history; the older messages are left out and the newest kept.
func TestMigrateForeignDSHSessionWindow(t *testing.T) {
	t.Parallel()
	srv := dshtest.Start(t, dshtest.Options{HistoryWindow: true, Reply: func(text string) string {
		if strings.Contains(text, "You write handoffs") {
			return workerHandoff
		}
		return "noted: " + text
	}})
	h := newHarnessEnv(t, harnessOptions{DSHURL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	host := dsh.New(dsh.Config{BaseURL: srv.URL, PollInterval: 5 * time.Millisecond})
	live, err := host.CreateSession(ctx, core.CreateRequest{Cwd: h.cwd, Title: "long one"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 130; i++ { // 260 messages
		text := fmt.Sprintf("message %d", i)
		if i == 0 {
			text = "OLDEST-MESSAGE-OUTSIDE-THE-WINDOW"
		}
		if i == 129 {
			text = "The service must listen on port 55837. The listener lives in internal/server/listen.go."
		}
		if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	native := live.NativeID()
	before := len(srv.Calls())

	c := h.start(t)
	p := rpctest.Must(c.Client, c.MigrationPreview, schema.MigrationPreviewParams{Source: &schema.MigrationSource{Harness: "dsh", NativeSessionID: native}, Target: schema.MigrationTarget{Harness: "dsh", Preset: "minimal"}})
	if !strings.Contains(p.Summary, "55837") {
		t.Fatalf("preview = %+v", p)
	}
	windows, pages := 0, 0
	for _, call := range srv.Calls()[before:] {
		if !strings.Contains(string(call.Payload), native) {
			continue
		}
		switch call.Method {
		case "session.historyWindow":
			windows++
			if !strings.Contains(string(call.Payload), `"maxMessages":240`) {
				t.Errorf("historyWindow payload %s, want the whole budget of 240 messages", call.Payload)
			}
		case "session.history":
			// The capability probe reads one message of a listed session.
			if !strings.Contains(string(call.Payload), `"maxMessages":1,`) && !strings.HasSuffix(string(call.Payload), `"maxMessages":1}`) {
				pages++
			}
		}
	}
	if windows != 1 || pages != 0 {
		t.Errorf("reads of the source: %d historyWindow, %d history; want one window read", windows, pages)
	}
	srcs := listSessions(t, c, false)
	if len(srcs) != 1 {
		t.Fatalf("sessions after the preview: %+v", srcs)
	}
	es := history(t, c, srcs[0].SessionID)
	users := 0
	for _, e := range es {
		if e.Kind == "user.message" {
			users++
			if strings.Contains(string(e.Payload), "OLDEST-MESSAGE") {
				t.Errorf("a message outside the window was read: %s", e.Payload)
			}
		}
	}
	if users != 120 {
		t.Errorf("%d user messages recorded, want the window's 120", users)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}
