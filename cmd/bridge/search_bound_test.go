package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// manyTermsExport writes a Bridge export of one session of n messages,
// each of 20 distinct random words starting with a, b, c or d: an index
// of many terms, over which a few prefix terms are a slow query.
func manyTermsExport(t *testing.T, n int) string {
	t.Helper()
	r := rand.New(rand.NewSource(7))
	var b strings.Builder
	b.WriteString(`{"format": "bridge.session", "version": 1, "session": {"sessionId": "s_terms", "harness": "fake", "cwd": "/w",
		"title": "many terms", "headId": "e_` + fmt.Sprint(n) + `", "archived": false,
		"createdAt": "2026-01-02T03:04:05Z", "updatedAt": "2026-01-02T03:04:05Z"}, "entries": [`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		var words []string
		for k := 0; k < 20; k++ {
			words = append(words, fmt.Sprintf("%c%x", 'a'+r.Intn(4), r.Int63()))
		}
		parent := ""
		if i > 1 {
			parent = fmt.Sprintf(`"parentId": "e_%d", `, i-1)
		}
		fmt.Fprintf(&b, `{"id": "e_%d", "sessionId": "s_terms", %s"seq": %d, "kind": "user.message", "payload": {"text": %q}, "createdAt": "2026-01-02T03:04:05Z"}`,
			i, parent, i, strings.Join(words, " "))
	}
	b.WriteString(`], "audit": [], "attachments": []}`)
	path := filepath.Join(t.TempDir(), "terms.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSearchCostBound: through one `bridge web`, a hostile tab sends
// searches no query may cost: 2,000 prefix terms (refused at once with
// -32602 naming the limit, the query not echoed), a 60 MB query (the
// same), and a slow query within the limits (bounded: answered, or
// refused as over the time limit), which it then cancels. While those run,
// another tab's search answers with its correct hit, and after them it
// still does.
func TestSearchCostBound(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", "bridge", manyTermsExport(t, 3000)); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	w := startWeb(t, dir)
	other, hostile := w.dial(t), w.dial(t)
	other.initialize(nil)
	hostile.initialize(nil)
	sid := createFake(t, other)
	rpctest.Must(other.Client, other.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say the kestrel hovers over the weir")})
	othersSearch := func(what string) {
		t.Helper()
		p := rpctest.Must(other.Client, other.SessionSearch, schema.SessionSearchParams{Query: "kestrel weir"})
		if len(p.Hits) != 2 || p.Hits[0].SessionID != sid {
			t.Fatalf("%s: the other tab's search found %+v, want the prompt and the answer of %s", what, p.Hits, sid)
		}
	}
	othersSearch("before")
	// refused checks a -32602 that names the limit and the query field and
	// does not carry the query.
	refused := func(what string, m wireMsg, limit string) {
		t.Helper()
		if m.Error == nil {
			t.Fatalf("%s: answered %.200s; want -32602", what, m.Result)
		}
		if m.Error.Code != -32602 || m.Error.ErrorData().Field != "query" || !strings.Contains(m.Error.Message, limit) {
			t.Fatalf("%s: error %d %q (data %s); want -32602 naming %q and the query field", what, m.Error.Code, m.Error.Message, m.Error.Data, limit)
		}
		if len(m.Error.Message)+len(m.Error.Data) > 1000 {
			t.Fatalf("%s: the error is %d bytes long: the query is echoed", what, len(m.Error.Message)+len(m.Error.Data))
		}
	}

	prefixes := strings.TrimSuffix(strings.Repeat("a* OR ", 2000), " OR ")
	slow := "a* OR b* OR c* OR d*"
	// The slow query first, so that it runs while the others are asked.
	slowID := hostile.Request("session/search", schema.SessionSearchParams{Query: slow})
	time.Sleep(100 * time.Millisecond) // not a bound: lets the slow query start
	manyID := hostile.Request("session/search", schema.SessionSearchParams{Query: prefixes})
	othersSearch("while the hostile tab's searches run")
	refused("2,000 prefix terms", hostile.Reply(manyID), "over the limit of 1024 bytes")
	refused("five prefix terms", hostile.Reply(hostile.Request("session/search", schema.SessionSearchParams{Query: "a* b* c* d* e*"})), "over the limit of 4")
	refused("40 words", hostile.Reply(hostile.Request("session/search", schema.SessionSearchParams{Query: strings.Repeat("kestrel ", 40)})), "over the limit of 32 words")
	m := hostile.Reply(slowID)
	t.Logf("the slow query: error %+v", m.Error)
	if m.Error != nil {
		refused("a slow query", m, "limit of 10s")
	} else {
		var p schema.SessionSearchResult
		if err := json.Unmarshal(m.Result, &p); err != nil || len(p.Hits) == 0 {
			t.Fatalf("the slow query answered %.200s", m.Result)
		}
	}
	big := strings.Repeat("kestrel ", 60_000_000/8)
	start := time.Now()
	refused("a 60 MB query", hostile.Reply(hostile.Request("session/search", schema.SessionSearchParams{Query: big})), "limit of 1024 bytes")
	t.Logf("the 60 MB query was refused in %v (sent and read included)", time.Since(start))

	// A slow query cancelled by its client is answered "cancelled", and
	// the other tab goes on.
	id := hostile.Request("session/search", schema.SessionSearchParams{Query: slow})
	hostile.Cancel(id)
	if m := hostile.Reply(id); m.Error == nil || m.Error.Code != -32800 {
		t.Fatalf("the cancelled search: %+v %.200s; want -32800", m.Error, m.Result)
	}
	othersSearch("after")
}
