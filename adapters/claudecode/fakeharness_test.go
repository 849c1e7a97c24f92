package claudecode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core/testhome"
)

// The test binary doubles as a fake `claude` when CLAUDECODE_FAKE names a
// mode: it speaks just enough stream-json to exercise the adapter's process
// handling (crashes, bad lines, control requests, a flood of events).
func TestMain(m *testing.M) {
	if mode := os.Getenv("CLAUDECODE_FAKE"); mode != "" {
		os.Exit(fakeClaude(mode))
	}
	testhome.Main(m)
}

// fakeCommand returns a Config that runs this test binary as a fake claude
// in mode, with extra env.
func fakeCommand(t testing.TB, mode string, env ...string) Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Command: exe, Env: append([]string{"CLAUDECODE_FAKE=" + mode}, env...), ConfigDir: t.TempDir()}
}

func fakeClaude(mode string) int {
	for _, a := range os.Args[1:] {
		if a == "--version" {
			fmt.Println("2.1.328 (Claude Code) [fake]")
			return 0
		}
		if a == "--help" {
			// An older CLI (CLAUDECODE_FAKE_OLD) has no --fork-session.
			fmt.Println("Usage: claude [options] [command] [prompt]\n\nOptions:")
			for _, f := range []string{"-p, --print", "--input-format <format>", "--output-format <format>", "--session-id <uuid>",
				"-r, --resume [value]", "--fork-session", "--no-session-persistence", "--permission-prompt-tool <tool>", "--replay-user-messages"} {
				if f == "--fork-session" && os.Getenv("CLAUDECODE_FAKE_OLD") != "" {
					continue
				}
				fmt.Printf("  %-40s does something\n", f)
			}
			return 0
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	sid := "00000000-0000-4000-8000-00000000f4ce"
	for i, a := range os.Args {
		if (a == "--session-id" || a == "--resume") && i+1 < len(os.Args) {
			sid = os.Args[i+1]
		}
	}
	result := func() {
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "stop_reason": "end_turn",
			"session_id": sid, "uuid": fmt.Sprintf("res-%d", time.Now().UnixNano()), "result": "done"})
	}
	turn := 0
	for in.Scan() {
		var m struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
			Response struct {
				Error string `json:"error"`
			} `json:"response"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			fmt.Fprintln(os.Stderr, "fake claude: bad input line")
			return 2
		}
		if m.Type == "control_request" {
			resp := map[string]any{}
			if m.Request.Subtype == "initialize" {
				// The older CLI's /compact takes no instructions.
				hint := "<optional custom summarization instructions>"
				if os.Getenv("CLAUDECODE_FAKE_OLD") != "" {
					hint = ""
				}
				resp["commands"] = []map[string]string{{"name": "clear", "argumentHint": ""}, {"name": "compact", "argumentHint": hint}}
			}
			emit(map[string]any{"type": "control_response", "response": map[string]any{
				"subtype": "success", "request_id": m.RequestID, "response": resp}})
			continue
		}
		if m.Type != "user" {
			continue
		}
		turn++
		emit(map[string]any{"type": "system", "subtype": "init", "session_id": sid, "model": "fake-claude", "uuid": "init-" + strconv.Itoa(turn)})
		switch mode {
		case "crash":
			emit(map[string]any{"type": "assistant", "session_id": sid, "uuid": "a-1",
				"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "partial work"}}}})
			out.WriteString("this is not json\n")
			out.Flush()
			fmt.Fprintln(os.Stderr, "Error: the fake harness hit a fatal bug")
			return 3
		case "control":
			// Ask Bridge something it does not answer; wait for its reply.
			emit(map[string]any{"type": "control_request", "request_id": "cli-1",
				"request": map[string]any{"subtype": "hook_callback", "callback_id": "hook_1"}})
			for in.Scan() {
				if json.Unmarshal(in.Bytes(), &m) == nil && m.Type == "control_response" {
					break
				}
			}
			emit(map[string]any{"type": "assistant", "session_id": sid, "uuid": "a-ctl",
				"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "bridge said: " + m.Response.Error}}}})
			emit(map[string]any{"type": "brand_new_type", "subtype": "x", "uuid": "u-new", "session_id": sid})
			result()
		case "bench":
			n, _ := strconv.Atoi(os.Getenv("CLAUDECODE_FAKE_N"))
			pace, _ := strconv.Atoi(os.Getenv("CLAUDECODE_FAKE_PACE_US"))
			for i := 0; i < n; i++ {
				if pace > 0 {
					time.Sleep(time.Duration(pace) * time.Microsecond)
				}
				emit(map[string]any{"type": "assistant", "session_id": sid, "uuid": fmt.Sprintf("b-%d-%d", turn, i),
					"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text",
						"text": strconv.FormatInt(time.Now().UnixNano(), 10)}}}})
			}
			result()
		case "slow":
			time.Sleep(300 * time.Millisecond)
			result()
		default:
			result()
		}
	}
	return 0
}
