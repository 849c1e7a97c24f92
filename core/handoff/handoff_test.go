package handoff

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/handoff/golden")

type goldenParse struct {
	Lang   string   `json:"lang"`
	Titles []string `json:"titles"`
	Extra  []string `json:"extra,omitempty"`
	Files  []string `json:"files"`
	Chars  []int    `json:"bodyChars"`
}

// TestParseUpstreamHandoffs parses the frozen upstream handoffs (Chinese and
// English) and compares what was read with golden files.
func TestParseUpstreamHandoffs(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "handoff")
	files, err := filepath.Glob(filepath.Join(dir, "upstream", "*.md"))
	if err != nil || len(files) < 7 {
		t.Fatalf("want the 7 frozen handoffs, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		if filepath.Base(f) == "SOURCE.md" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h, err := Parse(string(b))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			g := goldenParse{Lang: h.Lang, Files: h.Files()}
			for _, s := range h.Sections {
				g.Titles = append(g.Titles, s.Title)
				g.Chars = append(g.Chars, runes(s.Body))
			}
			for _, s := range h.Extra {
				g.Extra = append(g.Extra, s.Title)
			}
			got, _ := json.MarshalIndent(g, "", "  ")
			gp := filepath.Join(dir, "golden", strings.TrimSuffix(filepath.Base(f), ".md")+".json")
			if *update {
				os.MkdirAll(filepath.Dir(gp), 0o755)
				os.WriteFile(gp, append(got, '\n'), 0o644)
			}
			want, err := os.ReadFile(gp)
			if err != nil {
				t.Fatalf("golden file missing (run go test ./core/handoff -update): %v", err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
				t.Errorf("parse of %s differs from %s (go test ./core/handoff -update rewrites it)\ngot:\n%s\nwant:\n%s", f, gp, got, want)
			}
			// Round trip: rendering and parsing again gives the same sections.
			h2, err := Parse(h.Markdown())
			if err != nil || h2.Sections != h.Sections {
				t.Errorf("round trip changed the handoff: %v", err)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	full := "## Goal\ng\n\n## Current state\nc\n\n## Key decisions & conventions\n- d\n\n## Key files\n- a.go\n\n## Next step\nn\n"
	cases := map[string]struct {
		md   string
		want string
	}{
		"missing section": {strings.Replace(full, "## Key files\n- a.go\n\n", "", 1), `"Key files" is missing`},
		"empty body":      {strings.Replace(full, "## Goal\ng\n", "## Goal\n\n", 1), `"Goal" is empty`},
		"out of order":    {"## Current state\nc\n## Goal\ng\n## Key decisions & conventions\nd\n## Key files\nf\n## Next step\nn\n", "out of order"},
		"mixed languages": {strings.Replace(full, "## Next step", "## 下一步", 1), "mixes languages"},
		"nothing":         {"just prose", `"Goal" is missing`},
		"unknown heading": {"## Intro\nx\n" + full, `unexpected section "Intro"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(c.md)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse error = %v, want it to mention %s", err, c.want)
			}
		})
	}
	if _, err := Parse(full); err != nil {
		t.Fatalf("a complete handoff must parse: %v", err)
	}
}

func TestUnsupportedFiles(t *testing.T) {
	h, err := Parse("## Goal\ng\n## Current state\nc\n## Key decisions & conventions\nd\n## Key files\n- `src/a.go` (core)\n- src/invented.go\n## Next step\nn\n")
	if err != nil {
		t.Fatal(err)
	}
	got := h.UnsupportedFiles("we edited src/a.go yesterday")
	if len(got) != 1 || got[0] != "src/invented.go" {
		t.Fatalf("UnsupportedFiles = %v, want [src/invented.go]", got)
	}
}

func TestDetectLang(t *testing.T) {
	if DetectLang("plain english text") != "en" || DetectLang("用户在构建窗口 with a little English") != "zh" {
		t.Fatal("DetectLang misread")
	}
	// 15% is the threshold: 15 CJK of 100 is English, 16 of 100 Chinese.
	if got := DetectLang(strings.Repeat("中", 15) + strings.Repeat("a", 85)); got != "en" {
		t.Fatalf("15%% CJK: %s", got)
	}
	if got := DetectLang(strings.Repeat("中", 16) + strings.Repeat("a", 84)); got != "zh" {
		t.Fatalf("16%% CJK: %s", got)
	}
}

var seq int64

func entry(kind core.Kind, payload map[string]any) core.Entry {
	seq++
	return core.Entry{ID: fmt.Sprintf("e%d", seq), Seq: seq, Kind: kind, Payload: core.Payload(payload), CreatedAt: time.Unix(seq, 0)}
}

func TestFoldCountsOnlyMessagesAndCaps240(t *testing.T) {
	var b []core.Entry
	for i := 0; i < 300; i++ {
		b = append(b, entry(core.KindToolStarted, map[string]any{"toolId": "t"}))
		b = append(b, entry(core.KindUserMessage, map[string]any{"text": fmt.Sprintf("u%d", i)}))
		b = append(b, entry(core.KindAssistantMessage, map[string]any{"text": fmt.Sprintf("a%d", i)}))
	}
	s := Fold(b, FoldOptions{})
	if s.Stats.MessagesTotal != 600 || s.Stats.MessagesRead != 240 || s.Stats.UsersTotal != 120 {
		t.Fatalf("stats = %+v", s.Stats)
	}
	if strings.Contains(s.Text, "[121]") || !strings.Contains(s.Text, "u299") || strings.Contains(s.Text, "u179\n") {
		t.Fatalf("fold read the wrong window:\n%s", s.Text[:200])
	}
	if strings.Contains(s.Text, "toolId") {
		t.Fatal("tool traces must be left out")
	}
}

// TestFoldBudgets checks the exact character counts at the budget
// boundaries: quotas 25/45/30 of the budget after separators, unused
// shares flowing back users > recent > summary.
func TestFoldBudgets(t *testing.T) {
	heads := sectionLabels("en")
	lineLen := func(i int, text string) int { return runes(listLine(i, text)) }
	t.Run("only users, all fit", func(t *testing.T) {
		b := []core.Entry{entry(core.KindUserMessage, map[string]any{"text": strings.Repeat("x", 100)})}
		s := Fold(b, FoldOptions{SourceBudget: 1000})
		want := runes(heads[1]) + lineLen(0, strings.Repeat("x", 100))
		if s.Stats.SourceChars != want || s.Stats.UserChars != want || len(s.Dropped) != 0 {
			t.Fatalf("source %d chars, want %d; dropped %v", s.Stats.SourceChars, want, s.Dropped)
		}
	})
	t.Run("users take the whole budget when alone", func(t *testing.T) {
		var b []core.Entry
		for i := 0; i < 50; i++ {
			b = append(b, entry(core.KindUserMessage, map[string]any{"text": strings.Repeat("y", 96)}))
		}
		// Each line is "[n] " + 96 + "\n": 101 chars for n<10, 102 for n>=10.
		s := Fold(b, FoldOptions{SourceBudget: 1000})
		// head 33 + 9*101 = 942; the 10th line (102) would make 1044 > 1000.
		if got := s.Stats.UserChars; got != runes(heads[1])+9*101 || s.Stats.UsersUsed != 9 {
			t.Fatalf("users %d chars, %d used; want %d, 9", got, s.Stats.UsersUsed, runes(heads[1])+9*101)
		}
		if len(s.Dropped) == 0 || !strings.Contains(s.Dropped[0], "41 oldest user messages dropped") {
			t.Fatalf("dropped = %v", s.Dropped)
		}
	})
	t.Run("three sections at their quotas", func(t *testing.T) {
		var b []core.Entry
		b = append(b, entry(core.KindCheckpoint, map[string]any{"summary": strings.Repeat("s", 5000)}))
		for i := 0; i < 40; i++ {
			b = append(b, entry(core.KindUserMessage, map[string]any{"text": strings.Repeat("u", 96)}))
			b = append(b, entry(core.KindAssistantMessage, map[string]any{"text": strings.Repeat("a", 2000)}))
		}
		budget := 4004 // 4000 after two separators: quotas 1000 / 1800 / 1200
		s := Fold(b, FoldOptions{SourceBudget: budget})
		if s.Stats.CompactionChars != 1000 {
			t.Errorf("summary %d chars, want exactly its 1000 quota", s.Stats.CompactionChars)
		}
		// users: head + 9*101 + 10..17 at 102 = 33+909+816 = 1758 <= 1800; one more is 1860.
		if s.Stats.UserChars != runes(heads[1])+9*101+8*102 || s.Stats.UsersUsed != 17 {
			t.Errorf("users %d chars / %d used", s.Stats.UserChars, s.Stats.UsersUsed)
		}
		// recent: each clipped to 900 -> line "[n] "+900+"\n" = 905; head 43 + 1*905 = 948;
		// users left 42 unused, summary needs more: flows users > recent > summary,
		// recent needs 43+6*905 so it takes the 42: 1242 -> still one line.
		if s.Stats.AssistantUsed != 1 || s.Stats.RecentChars != runes(heads[2])+905 {
			t.Errorf("recent %d chars / %d used", s.Stats.RecentChars, s.Stats.AssistantUsed)
		}
		if s.Stats.SourceChars > budget {
			t.Errorf("source %d chars over the %d budget", s.Stats.SourceChars, budget)
		}
		if !s.Stats.ReusedCompaction || !strings.Contains(s.Text, truncMarker("en")) {
			t.Error("the clipped summary must carry the truncation marker")
		}
	})
	t.Run("unused summary share flows to users", func(t *testing.T) {
		var b []core.Entry
		for i := 0; i < 40; i++ {
			b = append(b, entry(core.KindUserMessage, map[string]any{"text": strings.Repeat("u", 96)}))
		}
		b = append(b, entry(core.KindAssistantMessage, map[string]any{"text": "done"}))
		s := Fold(b, FoldOptions{SourceBudget: 2002}) // 2000 after one separator
		recent := runes(heads[2]) + lineLen(0, "done")
		// users get 2000 - recent = 1944: head 33 + 9*101 + 9*102 = 1860; one more is 1962.
		if s.Stats.RecentChars != recent || s.Stats.UserChars != 33+9*101+9*102 {
			t.Fatalf("recent %d (want %d), users %d (want %d)", s.Stats.RecentChars, recent, s.Stats.UserChars, 33+9*101+9*102)
		}
	})
}

func TestCollectVisual(t *testing.T) {
	b := []core.Entry{
		entry(core.KindUserMessage, map[string]any{"text": "old image", "images": 1}),
		entry(core.KindAssistantMessage, map[string]any{"text": strings.Repeat("o", 500)}),
		entry(core.KindUserMessage, map[string]any{"text": "what is this", "images": 1}),
		entry(core.KindAssistantMessage, map[string]any{"text": "PORT=57431"}),
		entry(core.KindUserMessage, map[string]any{"text": "and this?", "images": 2}),
	}
	v := CollectVisual(b, 600) // the old block costs 9+500+240: over budget with the newer one
	if len(v.Answered) != 1 || v.Answered[0].AssistantText != "PORT=57431" || v.Omitted != 1 {
		t.Fatalf("answered %+v omitted %d", v.Answered, v.Omitted)
	}
	if len(v.Unresolved) != 1 || v.Unresolved[0].Images != 2 || v.Images != 4 {
		t.Fatalf("unresolved %+v images %d", v.Unresolved, v.Images)
	}
	app := v.Appendix("en")
	if !strings.Contains(app, "PORT=57431") || !strings.Contains(app, "## Unresolved images") {
		t.Fatalf("appendix:\n%s", app)
	}
}

// TestVisualBudgetAdmitsWholeBlocks holds the visual evidence budget's
// rules: complete blocks, newest first; a newer block that does not fit is
// left out while an older one that fits is kept; a block exactly at the
// budget is kept; the warning names what was left out, and no block is cut.
func TestVisualBudgetAdmitsWholeBlocks(t *testing.T) {
	block := func(user string, answer int) []core.Entry {
		return []core.Entry{
			entry(core.KindUserMessage, map[string]any{"text": user, "images": 1}),
			entry(core.KindAssistantMessage, map[string]any{"text": strings.Repeat("a", answer)}),
		}
	}
	const overhead = 240
	t.Run("newest oversize, older fits", func(t *testing.T) {
		old := block("old", 1000)
		b := append(old, block("new", VisualCharBudget)...)
		v := CollectVisual(b, 0)
		if len(v.Answered) != 1 || v.Answered[0].UserText != "old" || runes(v.Answered[0].AssistantText) != 1000 {
			t.Fatalf("kept %+v, want the older 1,000-character block whole", v.Answered)
		}
		if v.Omitted != 1 || len(v.OmittedIDs) != 1 || v.OmittedIDs[0] != b[2].ID {
			t.Fatalf("omitted %d %v, want the newest (%s) only", v.Omitted, v.OmittedIDs, b[2].ID)
		}
		w := v.OmittedWarning()
		if !strings.HasPrefix(w, "1 visual evidence block(s) left out whole") || strings.Contains(w, "older") || !strings.Contains(w, b[2].ID) {
			t.Errorf("warning %q", w)
		}
		app := v.Appendix("en")
		if !strings.Contains(app, strings.Repeat("a", 1000)+"\n") || strings.Contains(app, strings.Repeat("a", 1001)) {
			t.Errorf("the appendix must hold the kept block whole and nothing of the left-out one")
		}
	})
	t.Run("a block exactly at the budget is kept", func(t *testing.T) {
		b := block("u", VisualCharBudget-overhead-1)
		v := CollectVisual(b, 0)
		if v.Answered[0].Cost() != VisualCharBudget || len(v.Answered) != 1 || v.Omitted != 0 || v.OmittedWarning() != "" {
			t.Fatalf("cost %d, kept %d, omitted %d", v.Answered[0].Cost(), len(v.Answered), v.Omitted)
		}
		v = CollectVisual(block("u", VisualCharBudget-overhead), 0)
		if len(v.Answered) != 0 || v.Omitted != 1 {
			t.Fatalf("one character over: kept %d, omitted %d", len(v.Answered), v.Omitted)
		}
	})
	t.Run("several blocks at the edge", func(t *testing.T) {
		// Budget 1000; costs (oldest first) 400, 700, 300, 300: the two newest
		// take 600, the 700 does not fit in the 400 left, the oldest 400 does.
		var b []core.Entry
		for _, n := range []int{400, 700, 300, 300} {
			b = append(b, block("u", n-overhead-1)...)
		}
		v := CollectVisual(b, 1000)
		var kept []int
		for _, k := range v.Answered {
			kept = append(kept, k.Cost())
		}
		if fmt.Sprint(kept) != "[400 300 300]" || v.Omitted != 1 || v.OmittedIDs[0] != b[2].ID {
			t.Fatalf("kept costs %v (time order), omitted %v", kept, v.OmittedIDs)
		}
		if !strings.HasPrefix(v.OmittedWarning(), "1 visual evidence block(s)") || !strings.Contains(v.Appendix("en"), "(1 block(s) left out whole") {
			t.Errorf("warning %q", v.OmittedWarning())
		}
	})
}

func TestInstructionAndKickoff(t *testing.T) {
	if TokenLimit(0) != 900 || TokenLimit(100) != 100 || TokenLimit(4800) != 1800 {
		t.Fatalf("TokenLimit: %d %d %d", TokenLimit(0), TokenLimit(100), TokenLimit(4800))
	}
	for _, lang := range []string{"en", "zh"} {
		in := Instruction(lang, 0)
		for p := Goal; p < numParts; p++ {
			if !strings.Contains(in, "## "+Heading(lang, p)) {
				t.Errorf("%s instruction lacks heading %q", lang, Heading(lang, p))
			}
		}
		if Kickoff(lang, "S", false) == Kickoff(lang, "S", true) {
			t.Errorf("%s: wait and continue kickoffs must differ", lang)
		}
	}
}

func TestStripThink(t *testing.T) {
	if got := stripThink("a<think>x</think>b<think>y</think>c"); got != "abc" {
		t.Fatal(got)
	}
	if got := stripThink("a<think>unterminated"); got != "a" {
		t.Fatal(got)
	}
}

// TestSummaryCharsLeavesOutVisualEvidence: the summary budget counts the
// handoff but not the sections Appendix adds, in either language.
func TestSummaryCharsLeavesOutVisualEvidence(t *testing.T) {
	five := "## Goal\nShip it.\n\n## Next step\nTest it.\n"
	n := runes(strings.TrimSpace(five))
	for _, lang := range []string{"en", "zh"} {
		v := Visual{Answered: []EvidenceBlock{{UserText: "look", AssistantText: strings.Repeat("像素", 500), Images: 1}},
			Unresolved: []EvidenceBlock{{UserText: "and this", Images: 1, EntryID: "e9"}}}
		withApp := five + "\n" + v.Appendix(lang) + "\n## Extra notes\nkept\n"
		if got, want := SummaryChars(withApp), n+runes("\n\n## Extra notes\nkept"); got != want {
			t.Errorf("%s: %d characters, want %d (the appendix is not counted, a later section is)", lang, got, want)
		}
	}
	if SummaryChars("  "+five+"\r\n\r\n") != n {
		t.Error("surrounding white space and CRLF must not count")
	}
	if !strings.Contains(RepairInstruction("en", 3000, 2400), "within 2400 characters") || !strings.Contains(RepairInstruction("zh", 3000, 2400), "2400") {
		t.Error("the repair request must name the budget")
	}
}

// TestCarryModel: the model (and its provider) crosses harnesses by the
// pair's table and only where the provider is the same.
func TestCarryModel(t *testing.T) {
	for _, c := range []struct{ from, to, model, want string }{
		{"claude-code", "claude-code", "claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-code", "opencode", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"},
		{"opencode", "claude-code", "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"opencode", "claude-code", "openai/gpt-5", ""},
		{"codex", "opencode", "gpt-5", "openai/gpt-5"},
		{"opencode", "codex", "openai/gpt-5", "gpt-5"},
		{"dsh", "opencode", "deepseek-official/deepseek-v4-flash", "deepseek/deepseek-v4-flash"},
		{"opencode", "dsh", "deepseek/deepseek-v4-flash", "deepseek-official/deepseek-v4-flash"},
		{"dsh", "opencode", "other-route/model", ""},
		{"claude-code", "codex", "claude-sonnet-4-5", ""},
		{"codex", "dsh", "gpt-5", ""},
		{"claude-code", "opencode", "", ""},
	} {
		got, ok := CarryModel(c.from, c.to, c.model)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("CarryModel(%s → %s, %q) = %q, %v; want %q", c.from, c.to, c.model, got, ok, c.want)
		}
	}
}
