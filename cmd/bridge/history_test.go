package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// historyLine is one entry line of `bridge history`: its seq, whether it is
// marked as the --around entry, and its text.
var historyLine = regexp.MustCompile(`(?m)^ *(\d+)([ >]) \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}  \S+ +(.*)$`)

// historyPage runs `bridge history` and returns the seqs it printed, the
// seq of the line marked > (0 if none), the texts, and the --before and
// --after values its last lines suggest (-1 when it suggests none).
func historyPage(t *testing.T, dir string, args ...string) (seqs []int64, marked int64, texts []string, before, after int64) {
	t.Helper()
	out, stderr, code := runCLI(t, nil, append([]string{"--data-dir", dir, "history"}, args...)...)
	if code != 0 || stderr != "" {
		t.Fatalf("bridge history %v: exit %d, stderr %q", args, code, stderr)
	}
	for _, m := range historyLine.FindAllStringSubmatch(out, -1) {
		seq, _ := strconv.ParseInt(m[1], 10, 64)
		seqs = append(seqs, seq)
		texts = append(texts, m[3])
		if m[2] == ">" {
			if marked != 0 {
				t.Fatalf("bridge history %v marks two entries:\n%s", args, out)
			}
			marked = seq
		}
	}
	before, after = -1, -1
	for _, hint := range []struct {
		words string
		to    *int64
	}{{"older entries: bridge history " + args[0] + " --before ", &before}, {"newer entries: bridge history " + args[0] + " --after ", &after}} {
		if m := regexp.MustCompile(regexp.QuoteMeta(hint.words) + `(\d+)\n`).FindStringSubmatch(out); m != nil {
			*hint.to, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	empty := regexp.MustCompile(`^no entries( (before|after) seq \d+.*)?\n$`).MatchString(out)
	if empty != (len(seqs) == 0) {
		t.Fatalf("bridge history %v: an empty page must say so in one line, and only an empty page:\n%s", args, out)
	}
	if n := strings.Count(out, "\n"); n != len(seqs)+btoi(before >= 0)+btoi(after >= 0)+btoi(empty) {
		t.Fatalf("bridge history %v: %d lines, %d entries and the hints:\n%s", args, n, len(seqs), out)
	}
	return seqs, marked, texts, before, after
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// historyDataDir makes a SQLite data directory holding session "long" (200
// messages u0 a0 … u99 a99, with a tool call after every tenth
// answer), a branched session whose active branch leaves its first
// entries at the fourth, and another session.
func historyDataDir(t *testing.T) (dir string, long []core.Entry, branched []core.Entry, offBranch, elsewhere core.Entry) {
	t.Helper()
	dir = t.TempDir()
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, DatabaseFile), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	msg := func(k core.Kind, text string) core.NewEntry {
		if k == core.KindUserMessage {
			return core.NewEntry{Kind: k, Payload: core.Payload(core.UserMessagePayload{Text: text})}
		}
		return core.NewEntry{Kind: k, Payload: core.Payload(core.AssistantMessagePayload{Text: text})}
	}
	var batch []core.NewEntry
	for i := range 100 {
		batch = append(batch, msg(core.KindUserMessage, fmt.Sprintf("u%d", i)), msg(core.KindAssistantMessage, fmt.Sprintf("a%d", i)))
		if i%10 == 9 {
			batch = append(batch, core.NewEntry{Kind: core.KindToolStarted, Payload: core.Payload(map[string]any{"toolId": fmt.Sprint("t", i), "title": "ls"})})
		}
	}
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w", Title: "long"})
	if err != nil {
		t.Fatal(err)
	}
	if long, err = db.Append(ctx, s.ID, batch...); err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w", Title: "branched"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := db.Append(ctx, b.ID, batch[:20]...)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := db.AppendTo(ctx, b.ID, first[3].ID, batch[20:60]...)
	if err != nil {
		t.Fatal(err)
	}
	branched = append(slices.Clone(first[:4]), rest...)
	o, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w", Title: "other"})
	if err != nil {
		t.Fatal(err)
	}
	es, err := db.Append(ctx, o.ID, msg(core.KindUserMessage, "x"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, long, branched, first[10], es[0]
}

// seqsOf lists the entries' seqs.
func seqsOf(es []core.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// TestCLIHistoryForwardsAndAround: `bridge history --after SEQ` pages
// towards the head and `--around ENTRY` reads the page around an entry
// (marked >), as session/history's afterSeq and around do, through the
// built binary on a SQLite record. Following the printed hints from any
// page reads every entry of the active branch once, in order, on a long
// session and on a branched one.
func TestCLIHistoryForwardsAndAround(t *testing.T) {
	dir, long, branched, _, _ := historyDataDir(t)
	sid := long[0].SessionID

	// From the first entry forwards: 10 messages, the newer hint, no older one.
	seqs, marked, texts, before, after := historyPage(t, dir, sid, "--after", "0", "--max", "10")
	if !slices.Equal(seqs, seqsOf(long[:10])) || marked != 0 || before != -1 || after != long[9].Seq {
		t.Fatalf("--after 0 --max 10: seqs %v, marked %d, --before %d, --after %d", seqs, marked, before, after)
	}
	if texts[0] != "u0" || texts[9] != "a4" {
		t.Fatalf("--after 0: texts %q", texts)
	}
	// Following the hints forwards reaches the head, every entry once.
	all := seqs
	for pages := 0; after != -1; pages++ {
		if pages > 30 {
			t.Fatal("--after pages do not reach the head")
		}
		seqs, _, _, before, after = historyPage(t, dir, sid, "--after", fmt.Sprint(after), "--max", "15")
		if before != seqs[0] {
			t.Fatalf("a forward page from seq %d suggests --before %d", seqs[0], before)
		}
		all = append(all, seqs...)
	}
	if !slices.Equal(all, seqsOf(long)) {
		t.Fatalf("paging forwards read %v, the session is %v", all, seqsOf(long))
	}
	// At the head: an empty page, no hints; before the first entry too.
	if seqs, _, _, before, after := historyPage(t, dir, sid, "--after", fmt.Sprint(long[len(long)-1].Seq)); len(seqs) != 0 || before != -1 || after != -1 {
		t.Fatalf("--after the head: %v, --before %d, --after %d", seqs, before, after)
	}
	if seqs, _, _, before, after := historyPage(t, dir, sid, "--before", fmt.Sprint(long[0].Seq)); len(seqs) != 0 || before != -1 || after != -1 {
		t.Fatalf("--before the first entry: %v, --before %d, --after %d", seqs, before, after)
	}

	// Around a50: half the messages up to it, the rest after.
	hit := long[slices.IndexFunc(long, func(e core.Entry) bool { return strings.Contains(string(e.Payload), `"a50"`) })]
	seqs, marked, texts, before, after = historyPage(t, dir, sid, "--around", hit.ID, "--max", "10")
	at := slices.Index(seqs, hit.Seq)
	if marked != hit.Seq || at < 0 || texts[at] != "a50" || before != seqs[0] || after != seqs[len(seqs)-1] || !isRun(seqs, seqsOf(long)) {
		t.Fatalf("--around a50: seqs %v, marked %d, --before %d, --after %d", seqs, marked, before, after)
	}
	if got := messages(texts[:at+1]); got != "a48 u49 a49 u50 a50" {
		t.Fatalf("--around a50 up to it: %q", got)
	}
	if got := messages(texts[at+1:]); got != "u51 a51 u52 a52 u53" {
		t.Fatalf("--around a50 after it: %q", got)
	}
	// From the around page both ways covers the session.
	all = seqs
	for b := before; b != -1; {
		var page []int64
		page, _, _, b, _ = historyPage(t, dir, sid, "--before", fmt.Sprint(b), "--max", "40")
		all = append(page, all...)
	}
	for a := after; a != -1; {
		var page []int64
		page, _, _, _, a = historyPage(t, dir, sid, "--after", fmt.Sprint(a), "--max", "40")
		all = append(all, page...)
	}
	if !slices.Equal(all, seqsOf(long)) {
		t.Fatalf("paging both ways from --around read %v, the session is %v", all, seqsOf(long))
	}
	// --json is session/history's answer: hasNewer on these pages only.
	for _, c := range []struct {
		args  []string
		newer string
	}{{[]string{"--around", hit.ID}, `true`}, {[]string{"--after", "0", "--max", "500"}, `false`}, {nil, ``}} {
		out, stderr, code := runCLI(t, nil, append([]string{"--data-dir", dir, "history", sid, "--json"}, c.args...)...)
		var res struct {
			Entries  []schema.Entry  `json:"entries"`
			HasNewer json.RawMessage `json:"hasNewer"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || string(res.HasNewer) != c.newer || len(res.Entries) == 0 {
			t.Errorf("history --json %v: exit %d, stderr %q, hasNewer %s (want %q), %d entries", c.args, code, stderr, res.HasNewer, c.newer, len(res.Entries))
		}
	}

	// A branched session: forwards from the root follows the active branch,
	// and around an entry of it too.
	bid := branched[0].SessionID
	all = nil
	for a := int64(0); a != -1; {
		var page []int64
		page, _, _, _, a = historyPage(t, dir, bid, "--after", fmt.Sprint(a), "--max", "7")
		all = append(all, page...)
	}
	if !slices.Equal(all, seqsOf(branched)) {
		t.Fatalf("paging a branched session forwards read %v, its active branch is %v", all, seqsOf(branched))
	}
	if seqs, marked, _, _, _ := historyPage(t, dir, bid, "--around", branched[20].ID, "--max", "6"); marked != branched[20].Seq || !isRun(seqs, seqsOf(branched)) {
		t.Fatalf("--around on the branch: %v, marked %d; the branch is %v", seqs, marked, seqsOf(branched))
	}
}

// isRun reports whether part is a run of consecutive elements of whole.
func isRun(part, whole []int64) bool {
	i := slices.Index(whole, part[0])
	return i >= 0 && i+len(part) <= len(whole) && slices.Equal(part, whole[i:i+len(part)])
}

// messages joins the texts that are user or assistant messages (u1, a1).
func messages(texts []string) string {
	var out []string
	for _, s := range texts {
		if regexp.MustCompile(`^[ua]\d+$`).MatchString(s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// TestCLIHistoryPageErrors: --before, --after and --around are one at a
// time; bad numbers and unknown or misplaced entries are clear errors
// naming the flag as typed (usage, exit 2) or the entry (not found, exit
// 1), never a request field.
func TestCLIHistoryPageErrors(t *testing.T) {
	dir, long, _, offBranch, elsewhere := historyDataDir(t)
	sid := long[0].SessionID
	for _, c := range []struct {
		sid  string
		args []string
		exit int
		code string
		says []string
	}{
		{sid, []string{"--after", "3", "--before", "9"}, 2, "usage", []string{"--after and --before cannot be given together"}},
		{sid, []string{"--before", "9", "--around", long[5].ID}, 2, "usage", []string{"--around and --before cannot be given together"}},
		{sid, []string{"--around", long[5].ID, "--after", "0"}, 2, "usage", []string{"--after and --around cannot be given together"}},
		{sid, []string{"--after", "abc"}, 2, "usage", []string{"--after", `"abc"`}},
		{sid, []string{"--after", "1.5"}, 2, "usage", []string{"--after", `"1.5"`}},
		{sid, []string{"--after", "-1"}, 2, "usage", []string{"--after must not be negative"}},
		{sid, []string{"--before", "-1"}, 2, "usage", []string{"--before must not be negative"}},
		{sid, []string{"--after", "99999999999999999999"}, 2, "usage", []string{"--after", "out of range"}},
		{sid, []string{"--around", ""}, 2, "usage", []string{"--around needs an entry id"}},
		{sid, []string{"--around"}, 2, "usage", []string{"--around"}},
		{sid, []string{"--around", "e_missing"}, 1, "not_found", []string{`entry "e_missing" not found`}},
		{sid, []string{"--around", elsewhere.ID}, 2, "usage", []string{"--around", "belongs to session " + elsewhere.SessionID}},
		{offBranch.SessionID, []string{"--around", offBranch.ID}, 2, "usage", []string{"--around", "not on the active branch",
			"; to go on from it: bridge fork " + offBranch.SessionID + " --entry " + offBranch.ID}},
	} {
		args := append([]string{"--data-dir", dir, "history", c.sid}, c.args...)
		out, stderr, code := runCLI(t, nil, args...)
		if code != c.exit || out != "" || strings.Count(stderr, "bridge history:") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one error", c.args, code, out, stderr, c.exit)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(stderr, s) {
				t.Errorf("%v: %q does not say %q", c.args, stderr, s)
			}
		}
		for _, internal := range []string{"afterSeq", "beforeSeq", "maxMessages", "sessionId", "core:", "storage:"} {
			if strings.Contains(stderr, internal) {
				t.Errorf("%v: the message names %q: %s", c.args, internal, stderr)
			}
		}
		out, stderr, code = runCLI(t, nil, append([]string{"--json"}, args...)...)
		if ec, _ := jsonError(t, out); code != c.exit || stderr != "" || ec != c.code {
			t.Errorf("%v --json: exit %d, code %q, stderr %q; want %d, %q", c.args, code, ec, stderr, c.exit, c.code)
		}
	}
}
