package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// fakeServe stands in for `opencode serve` with the recorded shapes: the
// global event stream, session lookup with the recorded 404 body, prompts
// that publish scripted events before answering, and a failing abort.
type fakeServe struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	subs    []chan string
	turn    func(sessionID string) (events []string, info string)
	dropped chan struct{}
}

func newFakeServe(t *testing.T) *fakeServe {
	f := &fakeServe{t: t, dropped: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/health", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"healthy":true,"version":"1.18.33"}`)
	})
	mux.HandleFunc("GET /global/event", f.events)
	mux.HandleFunc("GET /session/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if id != "ses_known" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"name":"NotFoundError","data":{"message":"Session not found: %s"}}`, id)
			return
		}
		fmt.Fprint(w, `{"id":"ses_known","title":"t","directory":"/home/user/project","model":{"id":"fake-model","providerID":"fake"},"time":{"created":1,"updated":2}}`)
	})
	mux.HandleFunc("POST /session/{id}/message", func(w http.ResponseWriter, r *http.Request) {
		evs, info := f.turn(r.PathValue("id"))
		for _, e := range evs {
			f.publish(e)
		}
		fmt.Fprintf(w, `{"info":%s,"parts":[]}`, info)
	})
	mux.HandleFunc("POST /session/{id}/abort", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details.","ref":"err_5fd37a02"}}`)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServe) events(w http.ResponseWriter, r *http.Request) {
	ch := make(chan string, 64)
	f.mu.Lock()
	f.subs = append(f.subs, ch)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"payload\":{\"id\":\"evt_c\",\"type\":\"server.connected\",\"properties\":{}}}\n\n")
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case s, ok := <-ch:
			if !ok {
				return
			}
			fmt.Fprintf(w, "data: {\"directory\":\"/home/user/project\",\"project\":\"global\",\"payload\":%s}\n\n", s)
			w.(http.Flusher).Flush()
		}
	}
}

func (f *fakeServe) publish(payload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- payload
	}
}

// drop ends every open event stream (the server dropping subscribers).
func (f *fakeServe) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		close(ch)
	}
	f.subs = nil
}

func (f *fakeServe) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

func ev(id, typ, props string) string {
	return fmt.Sprintf(`{"id":%q,"type":%q,"properties":%s}`, id, typ, props)
}

// okTurn is a turn that answers text "hi <n>".
func okTurn(sid string, n int) []string {
	msg := fmt.Sprintf("msg_a%d", n)
	return []string{
		ev(fmt.Sprintf("evt_b%d", n), "session.status", `{"sessionID":"`+sid+`","status":{"type":"busy"}}`),
		ev(fmt.Sprintf("evt_m%d", n), "message.updated", `{"sessionID":"`+sid+`","info":{"id":"`+msg+`","role":"assistant","providerID":"fake","modelID":"fake-model","tokens":{"input":10,"output":1}}}`),
		ev(fmt.Sprintf("evt_p%d", n), "message.part.updated", fmt.Sprintf(`{"sessionID":%q,"part":{"id":"prt_t%d","messageID":%q,"sessionID":%q,"type":"text","text":"hi %d","time":{"start":1,"end":2}}}`, sid, n, msg, sid, n)),
		ev(fmt.Sprintf("evt_i%d", n), "session.idle", `{"sessionID":"`+sid+`"}`),
	}
}

type sinkLog struct {
	mu sync.Mutex
	es []core.NewEntry
}

func (s *sinkLog) sink(e core.Event) {
	if e.Entry != nil {
		s.mu.Lock()
		s.es = append(s.es, *e.Entry)
		s.mu.Unlock()
	}
}

func (s *sinkLog) entries() []core.NewEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]core.NewEntry(nil), s.es...)
}

func attached(t *testing.T, f *fakeServe) *Host {
	t.Helper()
	h := New(Config{TurnGrace: 30 * time.Second})
	if _, err := h.attach(context.Background(), f.srv.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func TestResumeErrorsCarryServerText(t *testing.T) {
	f := newFakeServe(t)
	h := attached(t, f)
	ctx := context.Background()
	live, err := h.Resume(ctx, core.ResumeRequest{NativeID: "ses_doesnotexist"}, nil)
	var re *core.ResumeError
	if live != nil || !errors.As(err, &re) {
		t.Fatalf("Resume(bogus) = %v, %v; want *core.ResumeError", live, err)
	}
	if re.NativeText != "Session not found: ses_doesnotexist" {
		t.Errorf("NativeText = %q", re.NativeText)
	}
	if core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("code = %s, want not_found", core.ErrorCode(err))
	}
	live, err = h.Resume(ctx, core.ResumeRequest{NativeID: "ses_known"}, nil)
	if err != nil || live.NativeID() != "ses_known" {
		t.Fatalf("Resume(known) = %v", err)
	}
	if err := live.Cancel(ctx); core.ErrorCode(err) != core.CodeHarness || !strings.Contains(err.Error(), "Unexpected server error") {
		t.Errorf("abort error = %v (%s), want harness error with the server's text", err, core.ErrorCode(err))
	}
	if _, err := h.History(ctx, "ses_doesnotexist"); err == nil {
		t.Error("History of an unknown session succeeded")
	}
}

func TestPromptWaitsForIdleAndMapsErrors(t *testing.T) {
	f := newFakeServe(t)
	h := attached(t, f)
	ctx := context.Background()
	n := 0
	f.turn = func(sid string) ([]string, string) {
		n++
		switch n {
		case 1:
			return okTurn(sid, n), `{"id":"msg_a1","role":"assistant","finish":"stop"}`
		case 2:
			return []string{
				ev("evt_b", "session.status", `{"sessionID":"`+sid+`","status":{"type":"busy"}}`),
				ev("evt_e", "session.error", `{"sessionID":"`+sid+`","error":{"name":"APIError","data":{"message":"fake model: scripted status 400","isRetryable":false}}}`),
				ev("evt_i", "session.idle", `{"sessionID":"`+sid+`"}`),
			}, `{"id":"msg_a2","role":"assistant","error":{"name":"APIError","data":{"message":"fake model: scripted status 400"}}}`
		default:
			return []string{
				ev("evt_b3", "session.status", `{"sessionID":"`+sid+`","status":{"type":"busy"}}`),
				ev("evt_e3", "session.error", `{"sessionID":"`+sid+`","error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}`),
				ev("evt_i3", "session.idle", `{"sessionID":"`+sid+`"}`),
			}, `{"id":"msg_a3","role":"assistant","error":{"name":"MessageAbortedError","data":{"message":"Aborted"}}}`
		}
	}
	log := &sinkLog{}
	live, err := h.Resume(ctx, core.ResumeRequest{NativeID: "ses_known"}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "hello"}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	if es := log.entries(); len(es) != 1 || es[0].Kind != core.KindAssistantMessage {
		t.Fatalf("entries when Prompt returned = %v", kinds(es))
	}
	res, err = live.Prompt(ctx, []core.Content{{Type: "text", Text: "fail"}})
	if res.StopReason != "error" || core.ErrorCode(err) != core.CodeHarness || !strings.Contains(err.Error(), "scripted status 400") {
		t.Errorf("failed turn = %+v, %v", res, err)
	}
	res, err = live.Prompt(ctx, []core.Content{{Type: "text", Text: "abort me"}})
	if err != nil || res.StopReason != "cancelled" {
		t.Errorf("aborted turn = %+v, %v", res, err)
	}
	if _, err := live.Prompt(ctx, []core.Content{{Type: "video"}}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("unknown content type: %v", err)
	}
	if err := live.Close(ctx); err != nil {
		t.Fatal(err)
	}
	<-live.Done()
	if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "late"}}); err == nil {
		t.Error("Prompt after Close succeeded")
	}
}

func TestEventStreamReconnects(t *testing.T) {
	f := newFakeServe(t)
	h := attached(t, f)
	ctx := context.Background()
	log := &sinkLog{}
	live, err := h.Resume(ctx, core.ResumeRequest{NativeID: "ses_known"}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	f.drop()
	deadline := time.Now().Add(30 * time.Second)
	for f.subscribers() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.subscribers() == 0 {
		t.Fatal("the host did not resubscribe after the stream dropped")
	}
	n := 0
	f.turn = func(sid string) ([]string, string) {
		n++
		return okTurn(sid, n), `{"id":"msg_a1","role":"assistant","finish":"stop"}`
	}
	if res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "again"}}); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt after reconnect = %+v, %v", res, err)
	}
	if len(ofKind(log.entries(), core.KindAssistantMessage)) != 1 {
		t.Errorf("entries after reconnect = %v", kinds(log.entries()))
	}
}

func TestMissingBinary(t *testing.T) {
	h := New(Config{Command: "opencode-not-installed-here"})
	_, err := h.CreateSession(context.Background(), core.CreateRequest{Cwd: t.TempDir()}, nil)
	if core.ErrorCode(err) != core.CodeUnavailable || !strings.Contains(err.Error(), "opencode") {
		t.Fatalf("CreateSession without the program: %v", err)
	}
	p := h.Probe(context.Background())
	if p.Binary != "" || len(p.Capabilities) != len(core.Capabilities) {
		t.Fatalf("probe = %+v", p)
	}
	for _, c := range p.Capabilities {
		if c.Available || c.Detail == "" {
			t.Errorf("capability %+v without the program", c)
		}
	}
}

func TestImportExport(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "opencode", "export-after-summarize.recorded.json")
	h := New(Config{})
	var calls int
	s1, err := h.Import(context.Background(), path, func(done, total int64) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if s1.NativeID == "" || s1.Cwd != "/home/user/project" || s1.Model != "fake/fake-model" || s1.Title != "t1" || calls == 0 {
		t.Errorf("imported session = %+v (progress calls %d)", s1, calls)
	}
	checkEntries(t, s1.Entries)
	if got := strings.Join(kinds(s1.Entries), ","); got != "user.message,assistant.message,usage.reported,context.compacted,usage.reported" {
		t.Fatalf("kinds = %s", got)
	}
	// The export carries each step's usage: the turn's (1200 in, 1 out) and
	// the summary's (1200 in, 20 out), at the messages' completion times.
	var in, out int64
	for _, e := range ofKind(s1.Entries, core.KindUsageReported) {
		u, _ := core.ParseUsage(e.Payload)
		in, out = in+u.InputTokens, out+u.OutputTokens
		if u.Model != "fake-model" || u.At == nil || u.At.Year() != 2026 || u.CostUSD != nil {
			t.Errorf("usage %s: want fake-model at the message's time, no cost (OpenCode's is 0)", e.Payload)
		}
	}
	if in != 2400 || out != 21 {
		t.Errorf("usage entries sum to %d in, %d out; the export's step-finish parts say 2400 and 21", in, out)
	}
	c := payload(t, s1.Entries[3])
	if c["trigger"] != "manual" || c["preTokens"] != float64(1200) || !strings.Contains(c["summary"].(string), "<summary>") {
		t.Errorf("compacted = %v", c)
	}
	s2, err := h.Import(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s1.Entries {
		if s1.Entries[i].NativeID != s2.Entries[i].NativeID {
			t.Errorf("entry %d native id differs between imports", i)
		}
	}
	// Bad input is a clear error, never a panic.
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"messages": 3`), 0o644)
	if _, err := h.Import(context.Background(), bad, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("malformed export: %v", err)
	}
	os.WriteFile(bad, []byte(`{"info":{},"messages":[]}`), 0o644)
	if _, err := h.Import(context.Background(), bad, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("export without id: %v", err)
	}
	if _, err := h.Import(context.Background(), filepath.Join(dir, "none.json"), nil); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("missing export: %v", err)
	}
	// Unreadable messages and parts are kept as data.
	os.WriteFile(bad, []byte(`{"info":{"id":"ses_z"},"messages":[{"info":7,"parts":[]},{"info":{"id":"msg_1","role":"assistant"},"parts":[5,{"id":"prt_1","type":"text","text":"fine"}]}]}`), 0o644)
	s3, err := h.Import(context.Background(), bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, s3.Entries)
	if got := strings.Join(kinds(s3.Entries), ","); got != "harness.event,harness.event,assistant.message" {
		t.Errorf("kinds = %s", got)
	}
}

func TestDomainErrorShapes(t *testing.T) {
	data := testdata(t, "errors.recorded.txt")
	var body string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, `{"name":"NotFoundError"`) {
			body = line
			break
		}
	}
	var ae apiError
	if err := json.Unmarshal([]byte(body), &ae); err != nil {
		t.Fatal(err)
	}
	err := domainError(nil, "prompt", &httpError{Method: "POST", Path: "/session/x/message", Status: 404, Body: body, API: &ae})
	if core.ErrorCode(err) != core.CodeNotFound || !strings.Contains(err.Error(), "Session not found: ses_doesnotexist") {
		t.Errorf("404 = %v", err)
	}
	err = domainError(nil, "prompt", &httpError{Method: "POST", Path: "/x", Status: 400, Body: `{"name":"BadRequest","data":{"message":"bad"}}`, API: &apiError{Name: "BadRequest"}})
	if core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("400 = %v", err)
	}
	err = domainError(nil, "prompt", &httpError{Method: "POST", Path: "/x", Status: 502, Body: "upstream down"})
	if core.ErrorCode(err) != core.CodeHarness || !strings.Contains(err.Error(), "upstream down") {
		t.Errorf("502 = %v", err)
	}
}
