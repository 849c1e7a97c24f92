package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The same prompt turn through `bridge acp` and through `bridge serve`, on
// the fake harness: a text, a tool call and another text (four entries
// recorded, the prompt's included). Goal: a turn through acp at ≥ 0.95× the
// speed of one through serve. Each also reports the latency from the prompt
// written to the first assistant text read (p50, p99): the fake's first
// token is produced the moment its turn starts, so this is everything
// Bridge adds in front of a harness's first token (reading the prompt,
// recording it, recording and announcing the text), pipes included.

const benchTurn = "say hello from the fake\ntool Read main.go\nsay done"

// turnProc is one bridge process the benchmark prompts, over either
// framing.
type turnProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	r     *bufio.Reader
	lsp   bool // LSP framing (serve); else one message per line (acp)
	sid   string
	next  int
	first []time.Duration
}

func startTurnProc(b *testing.B, lsp bool) *turnProc {
	b.Helper()
	dir, cwd := b.TempDir(), b.TempDir()
	args := []string{"--data-dir", dir, "acp", "--harness", "fake"}
	if lsp {
		args = []string{"--data-dir", dir, "serve"}
	}
	cmd := exec.Command(binPath, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &turnProc{cmd: cmd, in: in, r: bufio.NewReaderSize(out, 1<<16), lsp: lsp}
	b.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Wait()
	})
	if lsp {
		p.call(b, "initialize", map[string]any{"processId": nil, "capabilities": map[string]any{}})
		p.write(b, map[string]any{"jsonrpc": "2.0", "method": "initialized", "params": map[string]any{}})
		res := p.call(b, "session/create", map[string]any{"harness": "fake", "cwd": cwd})
		p.sid = res["sessionId"].(string)
	} else {
		p.call(b, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
		res := p.call(b, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
		p.sid = res["sessionId"].(string)
	}
	return p
}

func (p *turnProc) write(b *testing.B, m any) {
	body, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	if p.lsp {
		_, err = fmt.Fprintf(p.in, "Content-Length: %d\r\n\r\n%s", len(body), body)
	} else {
		_, err = p.in.Write(append(body, '\n'))
	}
	if err != nil {
		b.Fatal(err)
	}
}

func (p *turnProc) read(b *testing.B) []byte {
	if !p.lsp {
		line, err := p.r.ReadBytes('\n')
		if err != nil {
			b.Fatalf("reading from bridge acp: %v", err)
		}
		return line
	}
	n := -1
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			b.Fatalf("reading from bridge serve: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(p.r, body); err != nil {
		b.Fatal(err)
	}
	return body
}

// call sends a request and reads until its reply, noting when the first
// assistant text arrived (a session/update of an assistant.message entry
// for serve, an agent_message_chunk for acp).
func (p *turnProc) call(b *testing.B, method string, params any) map[string]any {
	p.next++
	id := p.next
	sent := time.Now()
	p.write(b, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	seen := false
	for {
		body := p.read(b)
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			b.Fatalf("%s: %v", body, err)
		}
		if m.Method == "session/update" && !seen && method != "initialize" {
			text := string(m.Params)
			if strings.Contains(text, `"assistant.message"`) && p.lsp || strings.Contains(text, `"agent_message_chunk"`) && !p.lsp {
				seen = true
				p.first = append(p.first, time.Since(sent))
			}
		}
		if m.Method == "" && m.ID != nil && *m.ID == id {
			if len(m.Error) > 0 {
				b.Fatalf("%s: %s", method, m.Error)
			}
			return m.Result
		}
	}
}

// turn runs one prompt turn and returns how long it took.
func (p *turnProc) turn(b *testing.B) time.Duration {
	start := time.Now()
	key := "content"
	if !p.lsp {
		key = "prompt"
	}
	res := p.call(b, "session/prompt", map[string]any{"sessionId": p.sid,
		key: []map[string]any{{"type": "text", "text": benchTurn}}})
	if res["stopReason"] != "end_turn" {
		b.Fatalf("stopReason %v", res["stopReason"])
	}
	return time.Since(start)
}

// reportFirst reports the first-text latencies' p50 and p99 in µs.
func (p *turnProc) reportFirst(b *testing.B, name string) {
	if len(p.first) == 0 {
		return
	}
	d := append([]time.Duration(nil), p.first...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(f float64) float64 { return float64(d[int(f*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), name+"-first-p50-µs")
	b.ReportMetric(q(0.99), name+"-first-p99-µs")
}

// BenchmarkACPTurn: "serve" and "acp" each run b.N turns in one process;
// "paired" runs one turn of each per iteration (alternating which goes
// first) and reports acp's speed relative to serve's, which holds better
// when the machine's load changes during the run.
func BenchmarkACPTurn(b *testing.B) {
	for _, tc := range []struct {
		name string
		lsp  bool
	}{{"serve", true}, {"acp", false}} {
		b.Run(tc.name, func(b *testing.B) {
			p := startTurnProc(b, tc.lsp)
			p.turn(b) // the first turn starts the harness session
			p.first = nil
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.turn(b)
			}
			b.StopTimer()
			p.reportFirst(b, tc.name)
		})
	}
	b.Run("paired", func(b *testing.B) {
		s, a := startTurnProc(b, true), startTurnProc(b, false)
		s.turn(b)
		a.turn(b)
		s.first, a.first = nil, nil
		var ts, ta time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2 == 0 {
				ts += s.turn(b)
				ta += a.turn(b)
			} else {
				ta += a.turn(b)
				ts += s.turn(b)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(ts)/float64(ta), "acp/serve-speed")
		s.reportFirst(b, "serve")
		a.reportFirst(b, "acp")
	})
}
