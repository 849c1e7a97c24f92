package handoff

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestSharedCases holds Parse to the cases in
// clients/typescript/test/handoff-cases.json, each with its expected
// problems, language and summary-budget count; the client package's node test holds the
// TypeScript parser (which the WebUI's editor uses) to the same file, so the
// two parsers cannot drift apart.
func TestSharedCases(t *testing.T) {
	raw, err := os.ReadFile("../../clients/typescript/test/handoff-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name     string   `json:"name"`
		MD       string   `json:"md"`
		Problems []string `json:"problems"`
		Lang     string   `json:"lang"`
		// SummaryChars is the count the summary budget holds (the
		// WebUI's live count uses the same rule).
		SummaryChars int `json:"summaryChars"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		h, err := Parse(c.MD)
		var got []string
		if err != nil {
			got = strings.Split(strings.TrimPrefix(err.Error(), "handoff: "), "; ")
		}
		if strings.Join(got, "\n") != strings.Join(c.Problems, "\n") {
			t.Errorf("%s: Go parser's problems %q, the shared file says %q", c.Name, got, c.Problems)
		}
		if err == nil && h.Lang != c.Lang {
			t.Errorf("%s: lang %q, the shared file says %q", c.Name, h.Lang, c.Lang)
		}
		if n := SummaryChars(c.MD); n != c.SummaryChars {
			t.Errorf("%s: SummaryChars %d, the shared file says %d", c.Name, n, c.SummaryChars)
		}
	}
}
