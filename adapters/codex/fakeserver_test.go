package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/testhome"
)

// The test binary doubles as a fake `codex app-server`: when
// BRIDGE_FAKE_CODEX is set, TestMain runs fakeServer instead of the tests.
// Modes:
//
//	replay:<file>:<section>  replay a recorded session (sections split by "###")
//	resume-error:<line id>   answer thread/resume with the recorded error of that id
//	crash                    exit 3 with a message on stderr at turn/start
//	approval                 ask for a command approval at turn/start
//	flood:<n>[:<gap µs>]     emit n agentMessage items at turn/start
//	noise                    emit bad lines and unknown methods, then finish the turn
//	compact-race             at thread/compact/start, first start a goal turn that the
//	                         compaction interrupts, then run the compaction turn; a second
//	                         thread/compact/start is refused
//	compact-fail             at thread/compact/start, fail the compaction turn
func TestMain(m *testing.M) {
	if mode := os.Getenv("BRIDGE_FAKE_CODEX"); mode != "" {
		os.Exit(fakeServer(mode))
	}
	testhome.Main(m)
}

// fakeHost returns a Host whose program is this test binary in mode.
func fakeHost(t testing.TB, mode string, presets ...core.Preset) *Host {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Command: exe, Presets: presets, Env: []string{
		"BRIDGE_FAKE_CODEX=" + mode,
		"BRIDGE_FAKE_CODEX_DATA=" + filepath.Dir(testdata(t, "x")),
	}})
}

// testdata returns the path of a file in testdata/codex.
func testdata(t testing.TB, name string) string {
	return filepath.Join(adaptertest.RepoRoot(t), "testdata", "codex", name)
}

type fakeOut struct{ w *bufio.Writer }

func (o fakeOut) line(s string) {
	o.w.WriteString(s)
	o.w.WriteByte('\n')
	o.w.Flush()
}

func (o fakeOut) send(v any) {
	b, _ := json.Marshal(v)
	o.line(string(b))
}

type fakeMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

func fakeServer(mode string) int {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := fakeOut{bufio.NewWriter(os.Stdout)}
	read := func() (fakeMsg, bool) {
		for {
			b, err := in.ReadBytes('\n')
			if len(bytes.TrimSpace(b)) > 0 {
				var m fakeMsg
				if json.Unmarshal(b, &m) != nil {
					fmt.Fprintf(os.Stderr, "fake: bad client line %q\n", b)
					return m, false
				}
				return m, true
			}
			if err != nil {
				return fakeMsg{}, false
			}
		}
	}
	if strings.HasPrefix(mode, "replay:") {
		parts := strings.Split(mode, ":")
		sec, _ := strconv.Atoi(parts[2])
		return fakeReplay(parts[1], sec, read, out)
	}
	const thread = "01a22a77-4374-7260-be16-6aa724b7bc90"
	compacts := 0
	for {
		m, ok := read()
		if !ok {
			return 0
		}
		switch m.Method {
		case "initialize":
			out.send(map[string]any{"id": m.ID, "result": map[string]any{"userAgent": "fake/0.0.0", "codexHome": "/nowhere"}})
		case "thread/start":
			out.send(map[string]any{"id": m.ID, "result": map[string]any{"thread": map[string]any{"id": thread}}})
		case "thread/resume":
			if strings.HasPrefix(mode, "resume-error:") {
				out.line(recordedError(strings.TrimPrefix(mode, "resume-error:"), m.ID))
				continue
			}
			out.send(map[string]any{"id": m.ID, "result": map[string]any{"thread": map[string]any{"id": "01a22a77-0000-7000-8000-000000000000"}}})
		case "turn/start":
			out.send(map[string]any{"id": m.ID, "result": map[string]any{"turn": map[string]any{"id": "turn-1", "status": "inProgress"}}})
			out.send(map[string]any{"method": "turn/started", "params": map[string]any{"threadId": thread, "turn": map[string]any{"id": "turn-1"}}})
			switch {
			case mode == "crash":
				fmt.Fprintln(os.Stderr, "thread 'main' panicked: fake codex crashed on purpose")
				return 3
			case mode == "approval":
				out.send(map[string]any{"id": 900, "method": "item/commandExecution/requestApproval", "params": map[string]any{
					"threadId": thread, "turnId": "turn-1", "itemId": "call_1", "command": "rm -rf build", "startedAtMs": 1}})
				reply, _ := read()
				var r struct {
					Decision string `json:"decision"`
				}
				_ = json.Unmarshal(reply.Result, &r)
				fakeAgent(out, "turn-1", "msg-approval", "decision="+r.Decision)
			case strings.HasPrefix(mode, "flood:"):
				// flood:<n>[:<gap µs>] emits n items, the send time in each id.
				parts := strings.Split(mode, ":")
				n, _ := strconv.Atoi(parts[1])
				var gap time.Duration
				if len(parts) > 2 {
					us, _ := strconv.Atoi(parts[2])
					gap = time.Duration(us) * time.Microsecond
				}
				for i := 0; i < n; i++ {
					if gap > 0 {
						time.Sleep(gap)
					}
					out.line(fmt.Sprintf(`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m%d-%d","text":"some streamed text of an ordinary length for one agent message","phase":null},"threadId":"%s","turnId":"turn-1","completedAtMs":1796012251310},"emittedAtMs":1796012251310}`,
						i, time.Now().UnixNano(), thread))
				}
			case mode == "noise":
				out.line("this is not json")
				out.line(`{"method":"brand/new/notification","params":{"x":1}}`)
				out.line(`{"id":77,"result":{}}`)
				fakeAgent(out, "turn-1", "msg-noise", "still fine")
			}
			out.send(map[string]any{"method": "turn/completed", "params": map[string]any{"threadId": thread, "turn": map[string]any{"id": "turn-1", "status": "completed"}}})
		case "thread/compact/start":
			compacts++
			if !fakeCompact(mode, compacts, m.ID, thread, out) {
				out.send(map[string]any{"id": m.ID, "result": map[string]any{}})
			}
		default:
			if len(m.ID) > 0 {
				out.send(map[string]any{"id": m.ID, "result": map[string]any{}})
			}
		}
	}
}

func fakeAgent(out fakeOut, turn, id, text string) {
	out.send(map[string]any{"method": "item/completed", "params": map[string]any{
		"item": map[string]any{"type": "agentMessage", "id": id, "text": text}, "threadId": "t", "turnId": turn}})
}

// recordedError returns the recorded error response with id want, re-addressed to id.
func recordedError(want string, id json.RawMessage) string {
	b, _ := os.ReadFile(filepath.Join(os.Getenv("BRIDGE_FAKE_CODEX_DATA"), "app-server-resume-errors.recorded.jsonl"))
	for _, l := range strings.Split(string(b), "\n") {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(l), &m) != nil || string(m["id"]) != want || m["error"] == nil {
			continue
		}
		m["id"] = id
		out, _ := json.Marshal(m)
		return string(out)
	}
	return fmt.Sprintf(`{"id":%s,"error":{"code":-32603,"message":"fake: no recorded error %s"}}`, id, want)
}

// fakeReplay replays one section of a recorded `>>`/`<<` session. Each
// client request is matched to the next recorded request with the same
// method (recorded requests the client does not make are skipped with their
// output); the recorded response is re-addressed to the client's id.
func fakeReplay(file string, section int, read func() (fakeMsg, bool), out fakeOut) int {
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 2
	}
	type step struct {
		sent   fakeMsg
		output []string
	}
	var steps []step
	sec := 0
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "###"):
			sec++
		case sec != section:
		case strings.HasPrefix(l, ">> "):
			var m fakeMsg
			_ = json.Unmarshal([]byte(l[3:]), &m)
			steps = append(steps, step{sent: m})
		case strings.HasPrefix(l, "<< ") && len(steps) > 0:
			steps[len(steps)-1].output = append(steps[len(steps)-1].output, l[3:])
		}
	}
	next := 0
	for {
		m, ok := read()
		if !ok {
			return 0
		}
		if len(m.ID) == 0 {
			// A client notification (initialized): emit the output of the
			// matching recorded notification if it is next.
			if next < len(steps) && steps[next].sent.Method == m.Method {
				for _, o := range steps[next].output {
					out.line(o)
				}
				next++
			}
			continue
		}
		found := -1
		for i := next; i < len(steps); i++ {
			if steps[i].sent.Method == m.Method && len(steps[i].sent.ID) > 0 {
				found = i
				break
			}
		}
		if found < 0 {
			out.send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "fake replay: unexpected " + m.Method}})
			continue
		}
		for _, o := range steps[found].output {
			var r map[string]json.RawMessage
			if json.Unmarshal([]byte(o), &r) == nil && r["method"] == nil && string(r["id"]) == string(steps[found].sent.ID) {
				r["id"] = m.ID
				nb, _ := json.Marshal(r)
				o = string(nb)
			}
			out.line(o)
		}
		next = found + 1
	}
}

// fakeCompact answers thread/compact/start n in the compact-* modes, in the
// order the real app-server was seen to report a goal turn racing a
// compaction (it reports false in other modes).
func fakeCompact(mode string, n int, id json.RawMessage, thread string, out fakeOut) bool {
	turn := func(method, id, status string, err any) {
		t := map[string]any{"id": id, "items": []any{}, "status": status, "error": err}
		out.send(map[string]any{"method": method, "params": map[string]any{"threadId": thread, "turn": t}})
	}
	item := func(method string) {
		out.send(map[string]any{"method": method, "params": map[string]any{"threadId": thread, "turnId": "turn-compact",
			"item": map[string]any{"type": "contextCompaction", "id": "cc-race"}}})
	}
	switch {
	case mode == "compact-race" && n > 1:
		out.send(map[string]any{"id": id, "error": map[string]any{"code": -32600, "message": "fake: a second thread/compact/start"}})
	case mode == "compact-race":
		// The goal-continuation turn Codex was starting reports
		// turn/started only now; the compaction interrupts it.
		turn("turn/started", "turn-goal", "inProgress", nil)
		out.send(map[string]any{"id": id, "result": map[string]any{}})
		turn("turn/completed", "turn-goal", "interrupted", nil)
		turn("turn/started", "turn-compact", "inProgress", nil)
		item("item/started")
		item("item/completed")
		turn("turn/completed", "turn-compact", "completed", nil)
	case mode == "compact-fail":
		out.send(map[string]any{"id": id, "result": map[string]any{}})
		turn("turn/started", "turn-compact", "inProgress", nil)
		turn("turn/completed", "turn-compact", "failed", map[string]any{"message": "fake: the compaction model call failed"})
	default:
		return false
	}
	return true
}
