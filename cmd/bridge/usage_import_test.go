package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestImportFillsUsageLedger: importing a recorded Claude Code transcript
// records each model response's usage (the last of the lines that repeat
// it) at the response's own time, priced from the configured table and
// marked estimated (a transcript carries no cost); `bridge usage` sums
// them on the transcript's day; importing the file again adds nothing.
func TestImportFillsUsageLedger(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	// What the transcript says: per response id, its last usage.
	type usage struct {
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
		Read   int64 `json:"cache_read_input_tokens"`
		Write  int64 `json:"cache_creation_input_tokens"`
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := map[string]usage{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l struct {
			Type    string `json:"type"`
			Message *struct {
				ID    string `json:"id"`
				Model string `json:"model"`
				Usage *usage `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "assistant" && l.Message != nil && l.Message.Usage != nil &&
			l.Message.Model != "<synthetic>" {
			last[l.Message.ID] = *l.Message.Usage
		}
	}
	var want usage
	for _, u := range last {
		want.Input += u.Input
		want.Output += u.Output
		want.Read += u.Read
		want.Write += u.Write
	}
	if len(last) < 2 || want.Input == 0 {
		t.Fatalf("the recorded transcript carries usage for %d responses: want a few", len(last))
	}

	dir := t.TempDir()
	price := 3.0 // dollars per million input or output tokens
	cfg := `{"prices": {"claude-opus-5-5": {"input": 3, "output": 3, "cacheRead": 3, "cacheWrite": 3}}}`
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(binPath, append([]string{"--data-dir", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("bridge %v: %v\n%s", args, err, out)
		}
		return out
	}
	run("import", "--harness", "claude-code", path)
	run("import", "--harness", "claude-code", path) // again: nothing new
	var r struct {
		Groups []struct {
			Key                                                                   string
			Reports, InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
			CostUSD                                                               float64 `json:"costUsd"`
			EstimatedUSD                                                          float64 `json:"estimatedUsd"`
		}
	}
	out := run("usage", "--group-by", "day", "--json")
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Groups) != 1 {
		t.Fatalf("bridge usage --group-by day: %s; want the transcript's one day", out)
	}
	g := r.Groups[0]
	cost := float64(want.Input+want.Output+want.Read+want.Write) * price / 1e6
	if g.Key != "2026-11-30" || g.Reports != int64(len(last)) || g.InputTokens != want.Input || g.OutputTokens != want.Output ||
		g.CacheReadTokens != want.Read || g.CacheWriteTokens != want.Write || math.Abs(g.CostUSD-cost) > 1e-6 ||
		math.Abs(g.EstimatedUSD-cost) > 1e-6 {
		t.Fatalf("bridge usage: %+v; want %d reports on 2026-11-30 summing %+v, all estimated at %.6f", g, len(last), want, cost)
	}
}
