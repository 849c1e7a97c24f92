package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// approvalsPerTurn is how many can_use_tool requests the stand-in harness
// asks in one turn.
const approvalsPerTurn = 500

// BenchmarkApprovalRoundTrip measures what Bridge adds to a tool approval:
// the stand-in `claude` (cmd/bridge/internal/permclaude) times each
// can_use_tool request from writing it to reading Bridge's answer, through
// the real bridge binary and Claude Code adapter, with the record written
// (approval.requested, approval.resolved). "client": the client declared
// capabilities.session.requestPermission and answers each
// session/requestPermission at once; Bridge's share is the harness's round
// trip less the client's own time with the request (its handler, measured
// in the client). "policy" is the baseline of the same run: a client
// without the capability, so Bridge answers with the preset's policy and no
// client hop. Reported: p50 and p99 in µs.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	bin := buildHelper(b, "permclaude")
	for _, mode := range []string{"policy", "client"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			times := filepath.Join(b.TempDir(), "times")
			cfg := map[string]any{"harnesses": map[string]any{
				"claude-code": map[string]any{"command": bin,
					"env": map[string]string{"PERMCLAUDE_N": strconv.Itoa(approvalsPerTurn), "PERMCLAUDE_OUT": times}},
				"codex": map[string]any{"disabled": true}, "opencode": map[string]any{"disabled": true},
				"acp": map[string]any{"disabled": true}, "dsh": map[string]any{"disabled": true},
			}}
			raw, _ := json.Marshal(cfg)
			if err := os.WriteFile(filepath.Join(dir, ConfigFile), raw, 0o600); err != nil {
				b.Fatal(err)
			}
			c := startBridge(b, dir)
			var mu sync.Mutex
			var held []time.Duration
			var caps schema.ClientCapabilities
			if mode == "client" {
				caps.Session = &schema.SessionClientCapabilities{RequestPermission: true}
				c.SetOnRequest(func(m wireMsg) (any, *wireError) {
					start := time.Now()
					p, _ := rpctest.ParamsAs[schema.SessionRequestPermissionParams](m)
					res := schema.SessionRequestPermissionResult{Outcome: schema.PermissionOutcome{Outcome: schema.OutcomeSelected, OptionID: p.Options[0].OptionID}}
					mu.Lock()
					held = append(held, time.Since(start))
					mu.Unlock()
					return res, nil
				})
			}
			c.initializeWith(caps, nil)
			s, err := c.SessionCreate(b.Context(), schema.SessionCreateParams{Harness: "claude-code", Cwd: b.TempDir()})
			must(b, "session/create", err)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := c.SessionPrompt(b.Context(), schema.SessionPromptParams{SessionID: s.SessionID, Content: prompt("go")})
				must(b, "session/prompt", err)
			}
			b.StopTimer()
			body, err := os.ReadFile(times)
			if err != nil {
				b.Fatal(err)
			}
			var rtt []time.Duration
			for _, l := range strings.Fields(string(body)) {
				n, _ := strconv.ParseInt(l, 10, 64)
				rtt = append(rtt, time.Duration(n))
			}
			mu.Lock()
			if mode == "client" && len(held) != len(rtt) {
				b.Fatalf("%d round trips timed by the harness, %d requests seen by the client", len(rtt), len(held))
			}
			for i := range held {
				rtt[i] -= held[i]
			}
			mu.Unlock()
			sort.Slice(rtt, func(i, j int) bool { return rtt[i] < rtt[j] })
			q := func(f float64) float64 { return float64(rtt[int(f*float64(len(rtt)-1))].Microseconds()) }
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(float64(len(rtt)), "approvals")
		})
	}
}
