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
			emit(controlResponse{Type: "control_response", Response: controlResult{Subtype: "success",
				RequestID: m.RequestID, Response: struct{}{}}})
		case "user":
			turn++
			emit(systemInit{Type: "system", Subtype: "init", SessionID: sid, Model: "perm-model",
				UUID: fmt.Sprintf("init-%d", turn)})
			var times []time.Duration
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("perm-%d-%d", turn, i)
				start := time.Now()
				emit(controlRequest{Type: "control_request", RequestID: id, Request: canUseTool{
					Subtype: "can_use_tool", ToolName: "Bash", ToolUseID: fmt.Sprintf("toolu_%d_%d", turn, i),
					Input: bashInput{Command: "make test"}}})
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
			emit(assistant{Type: "assistant", SessionID: sid, UUID: fmt.Sprintf("a-%d", turn),
				Message: assistantMessage{Role: "assistant", Content: []textBlock{{Type: "text", Text: "asked"}}}})
			emit(result{Type: "result", Subtype: "success", SessionID: sid, IsError: false,
				StopReason: "end_turn", UUID: fmt.Sprintf("r-%d", turn)})
		}
	}
}

// The lines permclaude writes. Members are in name order, as the maps it
// wrote before had them.

type controlResponse struct {
	Response controlResult `json:"response"`
	Type     string        `json:"type"`
}

type controlResult struct {
	RequestID string   `json:"request_id"`
	Response  struct{} `json:"response"`
	Subtype   string   `json:"subtype"`
}

type systemInit struct {
	Model     string `json:"model"`
	SessionID string `json:"session_id"`
	Subtype   string `json:"subtype"`
	Type      string `json:"type"`
	UUID      string `json:"uuid"`
}

type controlRequest struct {
	Request   canUseTool `json:"request"`
	RequestID string     `json:"request_id"`
	Type      string     `json:"type"`
}

type canUseTool struct {
	Input     bashInput `json:"input"`
	Subtype   string    `json:"subtype"`
	ToolName  string    `json:"tool_name"`
	ToolUseID string    `json:"tool_use_id"`
}

type bashInput struct {
	Command string `json:"command"`
}

type assistant struct {
	Message   assistantMessage `json:"message"`
	SessionID string           `json:"session_id"`
	Type      string           `json:"type"`
	UUID      string           `json:"uuid"`
}

type assistantMessage struct {
	Content []textBlock `json:"content"`
	Role    string      `json:"role"`
}

type textBlock struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

type result struct {
	IsError    bool   `json:"is_error"`
	SessionID  string `json:"session_id"`
	StopReason string `json:"stop_reason"`
	Subtype    string `json:"subtype"`
	Type       string `json:"type"`
	UUID       string `json:"uuid"`
}
