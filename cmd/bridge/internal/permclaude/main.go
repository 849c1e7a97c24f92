// Command permclaude is a stand-in for the `claude` program, for
// BenchmarkApprovalRoundTrip: it speaks just enough stream-json (initialize,
// a user turn, a result) and, in each turn, asks PERMCLAUDE_N can_use_tool
// control requests one after another, timing each from the moment its line
// is written to the moment the control_response is read. The durations (in
// nanoseconds, one a line) are appended to PERMCLAUDE_OUT. --version and
// --help answer as the probe needs.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

type msg struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *struct {
		Subtype   string `json:"subtype"`
		RequestID string `json:"request_id"`
	} `json:"response"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("2.1.328 (Claude Code)")
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "--help" {
		// The probe reads what the CLI offers from the flags --help lists.
		fmt.Println("Usage: claude [options] [command] [prompt]\n\nOptions:")
		for _, f := range []string{"-p, --print", "--input-format <format>", "--output-format <format>", "--session-id <uuid>",
			"-r, --resume [value]", "--permission-prompt-tool <tool>", "--replay-user-messages"} {
			fmt.Printf("  %-40s\n", f)
		}
		return
	}
	sid := "00000000-0000-4000-8000-000000000001"
	for i, a := range os.Args {
		if (a == "--session-id" || a == "--resume") && i+1 < len(os.Args) {
			sid = os.Args[i+1]
		}
	}
	n, _ := strconv.Atoi(os.Getenv("PERMCLAUDE_N"))
	outPath := os.Getenv("PERMCLAUDE_OUT")
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	turn := 0
	for in.Scan() {
		var m msg
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch m.Type {
		case "control_request":
			emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success",
				"request_id": m.RequestID, "response": map[string]any{}}})
		case "user":
			turn++
			emit(map[string]any{"type": "system", "subtype": "init", "session_id": sid, "model": "perm-model",
				"uuid": fmt.Sprintf("init-%d", turn)})
			var times []time.Duration
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("perm-%d-%d", turn, i)
				start := time.Now()
				emit(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{
					"subtype": "can_use_tool", "tool_name": "Bash", "tool_use_id": fmt.Sprintf("toolu_%d_%d", turn, i),
					"input": map[string]any{"command": "make test"}}})
				for in.Scan() {
					var r msg
					if json.Unmarshal(in.Bytes(), &r) == nil && r.Type == "control_response" && r.Response != nil && r.Response.RequestID == id {
						break
					}
				}
				times = append(times, time.Since(start))
			}
			if outPath != "" {
				f, err := os.OpenFile(outPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err == nil {
					for _, d := range times {
						fmt.Fprintln(f, d.Nanoseconds())
					}
					f.Close()
				}
			}
			emit(map[string]any{"type": "assistant", "session_id": sid, "uuid": fmt.Sprintf("a-%d", turn),
				"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "asked"}}}})
			emit(map[string]any{"type": "result", "subtype": "success", "session_id": sid, "is_error": false,
				"stop_reason": "end_turn", "uuid": fmt.Sprintf("r-%d", turn)})
		}
	}
}
