package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
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

// usageGroups runs `bridge usage --group-by by --json` on dataDir.
func usageGroups(t *testing.T, dataDir, by string, args ...string) []usageGroup {
	t.Helper()
	out, err := exec.Command(binPath, append([]string{"--data-dir", dataDir, "usage", "--group-by", by, "--json"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("bridge usage --group-by %s: %v\n%s", by, err, out)
	}
	var r struct {
		Groups []usageGroup
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r.Groups
}

// usageGroup is one group of `bridge usage --json`.
type usageGroup struct {
	Key                                                                   string
	Reports, InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	CostUSD                                                               float64 `json:"costUsd"`
	EstimatedUSD                                                          float64 `json:"estimatedUsd"`
	Unpriced                                                              int64
}

// tokens is a group's four token counts.
func (g usageGroup) tokens() [4]int64 {
	return [4]int64{g.InputTokens, g.OutputTokens, g.CacheReadTokens, g.CacheWriteTokens}
}

// jsonLines calls fn with each JSON object line of path.
func jsonLines(t *testing.T, path string, fn func(line []byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestImportFillsUsageLedgerEachHarness: `bridge import` of a recorded
// Codex rollout, `opencode export` document and DeepSeek Harness session
// log fills the ledger with what each carries (read here from the file
// itself: the rollout's last token_count totals, cached input apart; the
// export's step-finish tokens, reasoning counted as output; the log's
// assistant/message usage), and `bridge usage` sums it under the harness;
// importing each again adds nothing.
func TestImportFillsUsageLedgerEachHarness(t *testing.T) {
	root := filepath.Join("..", "..", "testdata")
	// What each file carries: input (not cached), output, cache reads and
	// writes, and the number of reports.
	type want struct {
		tok     [4]int64
		reports int64
	}
	codex := func(path string) (w want) {
		turns := map[string]bool{}
		jsonLines(t, path, func(line []byte) {
			var l struct {
				Payload struct {
					Type   string `json:"type"`
					TurnID string `json:"turn_id"`
					Info   *struct {
						Total struct {
							Input      int64 `json:"input_tokens"`
							Cached     int64 `json:"cached_input_tokens"`
							CacheWrite int64 `json:"cache_write_input_tokens"`
							Output     int64 `json:"output_tokens"`
						} `json:"total_token_usage"`
					} `json:"info"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &l) != nil {
				return
			}
			if l.Payload.Type == "task_complete" {
				turns[l.Payload.TurnID] = true
			}
			if i := l.Payload.Info; l.Payload.Type == "token_count" && i != nil {
				w.tok = [4]int64{i.Total.Input - i.Total.Cached, i.Total.Output, i.Total.Cached, i.Total.CacheWrite}
			}
		})
		w.reports = int64(len(turns))
		return w
	}
	opencode := func(path string) (w want) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Messages []struct {
				Parts []struct {
					Type   string `json:"type"`
					Tokens *struct {
						Input, Output, Reasoning int64
						Cache                    struct{ Read, Write int64 }
					} `json:"tokens"`
				} `json:"parts"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, m := range doc.Messages {
			for _, p := range m.Parts {
				if p.Type == "step-finish" && p.Tokens != nil {
					w.reports++
					w.tok[0] += p.Tokens.Input
					w.tok[1] += p.Tokens.Output + p.Tokens.Reasoning
					w.tok[2] += p.Tokens.Cache.Read
					w.tok[3] += p.Tokens.Cache.Write
				}
			}
		}
		return w
	}
	dsh := func(path string) (w want) {
		jsonLines(t, path, func(line []byte) {
			var l struct {
				Type string `json:"type"`
				Data struct {
					Usage *struct{ InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64 } `json:"usage"`
				} `json:"data"`
			}
			if json.Unmarshal(line, &l) == nil && l.Type == "assistant/message" && l.Data.Usage != nil {
				u := l.Data.Usage
				w.reports++
				w.tok[0] += u.InputTokens
				w.tok[1] += u.OutputTokens
				w.tok[2] += u.CacheReadTokens
				w.tok[3] += u.CacheWriteTokens
			}
		})
		return w
	}
	for _, c := range []struct {
		harness, file string
		want          func(path string) want
	}{
		{"codex", "codex/rollout-manual-compact.recorded.jsonl", codex},
		{"codex", "codex/rollout-tools.recorded.jsonl", codex},
		{"opencode", "opencode/export-after-summarize.recorded.json", opencode},
		{"dsh", "dsh/web-rpc.session.jsonl", dsh},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(root, c.file)
			w := c.want(path)
			if w.reports == 0 || w.tok[0] == 0 {
				t.Fatalf("%s carries %+v: want usage to import", c.file, w)
			}
			dir := t.TempDir()
			for i := 0; i < 2; i++ { // the second import adds nothing
				if _, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", c.harness, path); code != 0 {
					t.Fatalf("import %d: exit %d: %s", i+1, code, stderr)
				}
			}
			gs := usageGroups(t, dir, "harness")
			if len(gs) != 1 || gs[0].Key != c.harness || gs[0].tokens() != w.tok || gs[0].Reports != w.reports {
				t.Fatalf("bridge usage --group-by harness: %+v; want %s with %d reports of %v", gs, c.harness, w.reports, w.tok)
			}
		})
	}
}

// TestExportKeepsUsageLedger: a session whose record holds usage.reported
// entries (an imported Claude Code transcript, priced from the table),
// exported as Bridge JSON and imported into another data directory with
// --harness bridge, keeps every entry, and the other directory's ledger
// index is rebuilt from them: `bridge usage` gives the same sums by day,
// harness, model and session in both.
func TestExportKeepsUsageLedger(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	cfg := `{"prices": {"claude-opus-5-5": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}}`
	if err := os.WriteFile(filepath.Join(src, ConfigFile), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	out, stderr, code := runCLI(t, nil, "--data-dir", src, "import", "--harness", "claude-code", path, "--json")
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	var imp struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(out), &imp); err != nil || imp.SessionID == "" {
		t.Fatalf("import: %v %s", err, out)
	}
	doc := filepath.Join(t.TempDir(), "session.json")
	if _, stderr, code := runCLI(t, nil, "--data-dir", src, "export", imp.SessionID, "--format", "json", "--output", doc); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"usage.reported"`); n < 2 {
		t.Fatalf("the export carries %d usage.reported entries: want the session's", n)
	}
	if _, stderr, code := runCLI(t, nil, "--data-dir", dst, "import", "--harness", "bridge", doc); code != 0 {
		t.Fatalf("import --harness bridge: exit %d: %s", code, stderr)
	}
	for _, by := range []string{"day", "harness", "model", "session"} {
		a, b := usageGroups(t, src, by), usageGroups(t, dst, by)
		if len(a) == 0 || a[0].Reports < 2 || a[0].CostUSD <= 0 {
			t.Fatalf("source ledger by %s: %+v; want the transcript's priced reports", by, a)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("by %s: the imported record's ledger %+v differs from the source's %+v", by, b, a)
		}
	}
	// The session's own sums, through session/usage's sessionId.
	if a, b := usageGroups(t, src, "model", imp.SessionID), usageGroups(t, dst, "model", imp.SessionID); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Errorf("bridge usage %s: %+v in the copy, %+v in the source", imp.SessionID, b, a)
	}
}
