package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// exportPNG is a 1×1 PNG, the image the exported session carries.
const exportPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// hostileRig is a service whose record lives in root/data (the data
// directory), with a victim session the hostile exports aim at, and the
// lossless export of a session of another record that they are made from.
type hostileRig struct {
	*rig
	root, data, in string
	victim         core.Session
	doc            string // the source export
	srcID          string
	srcEntries     []string // ids of the source's entries
	n              int
}

func newHostileRig(t *testing.T, open opener) *hostileRig {
	ctx := context.Background()
	// The source session, in a record of its own: text, a tool call, an
	// image and an audit record about it.
	src := newRig(t, rigOptions{open: open})
	s := src.create()
	if _, err := src.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{
		{Type: "text", Text: "say what a picture\ntool ls /tmp"}, {Type: "image", MediaType: "image/png", Data: exportPNG}}}); err != nil {
		t.Fatal(err)
	}
	src.prompt(s.ID, "say the second answer")
	if err := src.db.AppendAudit(ctx, core.AuditRecord{Source: "test", Kind: "test.noted", Entity: s.ID, Body: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	doc, err := src.svc.Export(ctx, s.ID, "json")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostileRig{root: t.TempDir(), doc: doc, srcID: s.ID}
	for _, e := range src.branch(s.ID) {
		h.srcEntries = append(h.srcEntries, e.ID)
	}
	h.data, h.in = filepath.Join(h.root, "data"), filepath.Join(h.root, "in")
	for _, d := range []string{h.data, h.in} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.rig = newRig(t, rigOptions{open: open, dir: h.data})
	h.victim = h.create()
	h.prompt(h.victim.ID, "say the victim's own answer")
	h.prompt(h.victim.ID, "say and another")
	if h.victim, err = h.db.GetSession(ctx, h.victim.ID); err != nil {
		t.Fatal(err)
	}
	return h
}

// fresh is the source export made a session of its own: the session id
// and every entry id get the suffix _n, so that each case imports a session
// this record does not have.
func (h *hostileRig) fresh() string {
	h.n++
	doc := strings.ReplaceAll(h.doc, h.srcID, fmt.Sprintf("%s_%d", h.srcID, h.n))
	for _, id := range h.srcEntries {
		doc = strings.ReplaceAll(doc, `"`+id+`"`, fmt.Sprintf(`"%s_%d"`, id, h.n))
	}
	return doc
}

// sessionOf is the session id a document names ("" when none can be read).
func sessionOf(doc string) string {
	m := regexp.MustCompile(`"sessionId": "([^"]*)"`).FindStringSubmatch(doc)
	if m == nil {
		return ""
	}
	return m[1]
}

// snapshot is every session of the record, dumped whole.
func (h *hostileRig) snapshot(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	list, _, err := h.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		d, err := h.db.Dump(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		out[s.ID] = string(b)
	}
	return out
}

// outside lists the files under root that are not in the data directory.
func (h *hostileRig) outside(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(h.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == h.data {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hostile is one crafted export: the document, and whether it may import
// (adding only its own session) or must be refused.
type hostile struct {
	name string
	doc  string
	ok   bool
}

// edit replaces the first match of re in doc by repl (the test fails
// when nothing matches, so that a case never silently tests nothing).
func edit(t *testing.T, doc, re, repl string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	loc := rx.FindStringIndex(doc)
	if loc == nil {
		t.Fatalf("edit: %s matches nothing", re)
	}
	return doc[:loc[0]] + rx.ReplaceAllString(doc[loc[0]:loc[1]], repl) + doc[loc[1]:]
}

// TestHostileExports imports crafted Bridge exports (structure, numbers,
// times, references to another session, images, invalid UTF-8, a session
// already present) into a record holding a victim session. Each is
// refused with an invalid/conflict/unsupported error, or adds only its own
// session; no other session changes in any way, nothing is written outside
// the data directory, and whatever was imported reads back as valid UTF-8.
func TestHostileExports(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		h := newHostileRig(t, open)
		ve, err := h.db.ActiveBranch(ctx, h.victim.ID)
		if err != nil {
			t.Fatal(err)
		}
		victimEntry := ve[0].ID
		f := h.fresh
		e := func(doc, re, repl string) string { return edit(t, doc, re, repl) }
		// img edits the document's images (its last "attachments" member; a
		// user message's payload lists the images it refers to too).
		img := func(doc, re, repl string) string {
			i := strings.LastIndex(doc, `"attachments"`)
			return doc[:i] + edit(t, doc[i:], re, repl)
		}
		firstEntry := `("entries": \[\s*\{[^{]*?)"seq": 1,`
		secondSeq := `"seq": 2,`
		cases := []hostile{
			{name: "empty file", doc: ""},
			{name: "null", doc: "null"},
			{name: "an array", doc: "[]"},
			{name: "a string", doc: `"bridge.session"`},
			{name: "not JSON", doc: "hello"},
			{name: "truncated", doc: f()[:len(h.doc)/2]},
			{name: "two exports back to back", doc: f() + f()},
			{name: "trailing garbage", doc: f() + "x"},
			{name: "trailing comma and object", doc: f() + ",{}"},
			{name: "trailing white space only", doc: f() + "\n\n  \t\n", ok: true},
			{name: "unknown top-level member", doc: e(f(), `^\{`, `{"evil": 1,`)},
			{name: "entries twice", doc: e(f(), `^\{`, `{"entries": [],`)},
			{name: "session twice", doc: e(f(), `^\{`, `{"session": {"sessionId": "s_other", "harness": "fake"},`)},
			{name: "wrong format", doc: e(f(), `"bridge.session"`, `"bridge.sessions"`)},
			{name: "version 2", doc: e(f(), `"version": 1`, `"version": 2`)},
			{name: "version as a string", doc: e(f(), `"version": 1`, `"version": "1"`)},
			{name: "version 1e400", doc: e(f(), `"version": 1`, `"version": 1e400`)},
			{name: "no session", doc: `{"format": "bridge.session", "version": 1, "entries": []}`},
			{name: "session null", doc: `{"format": "bridge.session", "version": 1, "session": null, "entries": []}`},
			{name: "session with an unknown field", doc: e(f(), `"session": \{`, `"session": {"evil": true,`)},
			{name: "session without id", doc: e(f(), `("session": \{\s*)"sessionId": "[^"]*"`, `$1"sessionId": ""`)},
			{name: "session without harness", doc: e(f(), `"harness": "fake"`, `"harness": ""`)},
			{name: "session id of 2 KB", doc: strings.ReplaceAll(f(), h.srcID+"_", strings.Repeat("s", 2048)+"_")},
			{name: "seq at int64's top", doc: e(f(), secondSeq, `"seq": 9223372036854775807,`)},
			{name: "seq past 2^53", doc: e(f(), secondSeq, `"seq": 9007199254740993,`)},
			{name: "seq past int64", doc: e(f(), secondSeq, `"seq": 9223372036854775808,`)},
			{name: "seq zero", doc: e(f(), firstEntry, `$1"seq": 0,`)},
			{name: "seq negative", doc: e(f(), firstEntry, `$1"seq": -5,`)},
			{name: "seq fractional", doc: e(f(), secondSeq, `"seq": 1.5,`)},
			{name: "seq 1e30", doc: e(f(), secondSeq, `"seq": 1e30,`)},
			{name: "seq repeated", doc: e(f(), secondSeq, `"seq": 1,`)},
			{name: "token estimate negative", doc: e(f(), `"kind": "user.message"`, `"tokenEstimate": -1, "kind": "user.message"`)},
			{name: "token estimate 2^62", doc: e(f(), `"kind": "user.message"`, `"tokenEstimate": 4611686018427387904, "kind": "user.message"`)},
			{name: "entry in the year 3000", doc: e(f(), `("entries"[\s\S]*?"createdAt": ")\d{4}`, `${1}3000`)},
			{name: "entry in the year 1000", doc: e(f(), `("entries"[\s\S]*?"createdAt": ")\d{4}`, `${1}1000`)},
			{name: "entry in the year 1", doc: e(f(), `("entries"[\s\S]*?"createdAt": ")[^"]*`, `${1}0001-01-01T00:00:00Z`)},
			{name: "session created in 3000", doc: e(f(), `("session"[\s\S]*?"createdAt": ")\d{4}`, `${1}3000`)},
			{name: "session updated in 9999", doc: e(f(), `("session"[\s\S]*?"updatedAt": ")\d{4}`, `${1}9999`)},
			{name: "audit record in 3000", doc: e(f(), `("audit"[\s\S]*?"time": ")\d{4}`, `${1}3000`)},
			{name: "time that is not one", doc: e(f(), `("entries"[\s\S]*?"createdAt": ")[^"]*`, `${1}yesterday`)},
			{name: "entry of the victim session", doc: e(f(), `("entries"[\s\S]*?"sessionId": ")[^"]*`, `${1}`+h.victim.ID)},
			{name: "entry id of a victim's entry", doc: e(f(), `("entries": \[\s*\{\s*"id": ")[^"]*`, `${1}`+victimEntry)},
			{name: "parent in the victim session", doc: e(f(), `"parentId": "[^"]*"`, `"parentId": "`+victimEntry+`"`)},
			{name: "parent that comes later", doc: func() string {
				doc := f()
				return e(doc, `"parentId": "[^"]*"`, fmt.Sprintf(`"parentId": "%s_%d"`, h.srcEntries[len(h.srcEntries)-1], h.n))
			}()},
			{name: "parent that does not exist", doc: e(f(), `"parentId": "[^"]*"`, `"parentId": "e_nowhere"`)},
			{name: "unknown kind", doc: e(f(), `"kind": "user.message"`, `"kind": "user.mesage"`)},
			{name: "payload missing its text", doc: e(f(), `("kind": "assistant.message",\s*"payload": \{)[^}]*\}`, `$1"x": 1}`)},
			{name: "payload an array", doc: e(f(), `("kind": "assistant.message",\s*"payload": )\{[^}]*\}`, `$1[1]`)},
			{name: "entry without id", doc: e(f(), `("entries": \[\s*\{\s*"id": ")[^"]*`, `${1}`)},
			{name: "entry id of 2 KB", doc: e(f(), `("entries": \[\s*\{\s*"id": ")[^"]*`, `${1}`+strings.Repeat("e", 2048))},
			{name: "head not an entry", doc: e(f(), `"headId": "[^"]*"`, `"headId": "e_nowhere"`)},
			{name: "head in the victim session", doc: e(f(), `"headId": "[^"]*"`, `"headId": "`+victimEntry+`"`)},
			{name: "checkpoint in the victim session", doc: e(f(), `"headId"`, `"latestCheckpointId": "`+victimEntry+`", "headId"`)},
			{name: "audit record about the victim", doc: e(f(), `("audit"[\s\S]*?"entity": ")[^"]*`, `${1}`+h.victim.ID)},
			{name: "audit record without kind", doc: e(f(), `"kind": "test.noted"`, `"kind": ""`)},
			{name: "image not base64", doc: strings.Replace(f(), exportPNG, "!!!", 1)},
			{name: "image not matching its hash", doc: strings.Replace(f(), exportPNG, "aGVsbG8=", 1)},
			{name: "image of type text/html", doc: img(f(), `"mediaType": "image/png"`, `"mediaType": "text/html"`)},
			{name: "image hash a path", doc: img(f(), `"sha256": "[^"]*"`, `"sha256": "../../../../escaped"`)},
			{name: "image size wrong", doc: img(f(), `"bytes": \d+`, `"bytes": 5`)},
			{name: "image with an unknown field", doc: img(f(), `"bytes"`, `"path": "/etc/passwd", "bytes"`)},
			{name: "a message naming an image by a path", doc: e(f(), `("attachments": \[\s*\{\s*"sha256": ")[^"]*`, `${1}../../../../escaped`), ok: true},
			{name: "invalid UTF-8 in a message", doc: strings.Replace(f(), "the second answer", "the \xff\xfe second \xc3 answer", 1), ok: true},
			{name: "invalid UTF-8 in a payload's member name", doc: e(f(), `("kind": "assistant.message",\s*"payload": \{)`, "$1\"\xff\xff\": 1,"), ok: true},
			{name: "invalid UTF-8 in the title", doc: e(f(), `"title": "[^"]*"`, "\"title\": \"t\xed\xa0\x80\""), ok: true},
			{name: "invalid UTF-8 in an audit body", doc: e(f(), `"body": \{`, "\"body\": {\"bad\": \"\xf0\x28\x8c\xbc\","), ok: true},
			{name: "invalid UTF-8 in a native id", doc: e(f(), `"kind": "user.message"`, "\"nativeId\": \"n\xc0\xaf\", \"kind\": \"user.message\""), ok: true},
			{name: "lone surrogate escape", doc: strings.Replace(f(), "the second answer", `the \ud800 answer`, 1), ok: true},
			{name: "NUL escape in a message", doc: strings.Replace(f(), "the second answer", `the \u0000 answer`, 1), ok: true},
		}
		if len(cases) < 50 {
			t.Fatalf("only %d cases", len(cases))
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := h.snapshot(t)
				path := filepath.Join(h.in, fmt.Sprintf("case%02d.json", i))
				if err := os.WriteFile(path, []byte(c.doc), 0o600); err != nil {
					t.Fatal(err)
				}
				out, err := h.svc.SessionImport(ctx, schema.SessionImportParams{Harness: "bridge", Path: path})
				after := h.snapshot(t)
				own := sessionOf(c.doc)
				switch {
				case c.ok && err != nil:
					t.Fatalf("refused: %v", err)
				case !c.ok && err == nil:
					t.Fatalf("imported (%+v); want it refused", out)
				case err != nil:
					t.Logf("refused: %.300v", err)
					code := core.ErrorCode(err)
					if code != core.CodeInvalid && code != core.CodeConflict && code != core.CodeUnsupported {
						t.Fatalf("refused with %s: %v; want invalid, conflict or unsupported", code, err)
					}
					if len(err.Error()) > 2000 {
						t.Fatalf("the error is %d bytes long", len(err.Error()))
					}
					if _, ok := after[own]; ok && before[own] == "" && own != "" {
						t.Fatalf("a refused import left session %s", own)
					}
				default:
					if out.SessionID != own || out.Entries == 0 {
						t.Fatalf("imported %+v, want entries of %s", out, own)
					}
					if !utf8.ValidString(after[own]) {
						t.Fatalf("the imported session reads back with invalid UTF-8: %q", after[own])
					}
					page, err := h.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: own})
					if err != nil {
						t.Fatal(err)
					}
					if b, _ := json.Marshal(page); !utf8.Valid(b) || !json.Valid(b) {
						t.Fatalf("history of the imported session is not valid UTF-8 JSON: %q", b)
					}
				}
				for id, d := range before {
					if after[id] != d {
						t.Fatalf("session %s changed:\nbefore %s\nafter  %s", id, d, after[id])
					}
				}
				for id := range after {
					if before[id] == "" && id != own {
						t.Fatalf("the import added session %s, not its own %s", id, own)
					}
				}
				if got := h.outside(t); len(got) != i+1 {
					t.Fatalf("files outside the data directory: %v", got)
				}
			})
		}
	})
}

// TestImportIntoASessionAlreadyPresent: an export naming a session the
// record already has (its own export, edited) cannot move that session's
// head fields: title, native session id, archived flag and head stay, the
// active branch is unchanged, and the session only gains the file's new
// entries, after its own (an entry slotted among them is refused). The
// next prompt continues the session's own sequence.
func TestImportIntoASessionAlreadyPresent(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		h := newHostileRig(t, open)
		v := h.victim
		if _, err := h.db.PatchSession(ctx, v.ID, core.SessionPatch{NativeSessionID: ptr("native-own")}); err != nil {
			t.Fatal(err)
		}
		v, _ = h.db.GetSession(ctx, v.ID)
		branch := h.branch(v.ID)
		last := branch[len(branch)-1]
		doc, err := h.svc.Export(ctx, v.ID, "json")
		if err != nil {
			t.Fatal(err)
		}
		newEntry := func(id string, seq int64, parent string) string {
			return fmt.Sprintf(`{"id": %q, "sessionId": %q, "parentId": %q, "seq": %d, "kind": "user.message",
				"payload": {"text": "injected %s"}, "createdAt": "2026-01-02T03:04:05Z"}`, id, v.ID, parent, seq, id)
		}
		// hijack is the session's export with every head field changed and
		// extra entries after its own (only extra, with alone).
		hijack := func(extra string, alone bool) string {
			d := edit(t, doc, `"title": "[^"]*"`, `"title": "hijacked"`)
			d = edit(t, d, `"nativeSessionId": "[^"]*"`, `"nativeSessionId": "native-evil"`)
			d = edit(t, d, `"archived": false`, `"archived": true`)
			d = edit(t, d, `"headId": "[^"]*"`, `"headId": "e_new1"`)
			if alone {
				return edit(t, d, `"entries": \[[\s\S]*?\}\s*\]\s*,\s*"audit"`, `"entries": [`+extra+`], "audit"`)
			}
			return edit(t, d, `\}\s*\]\s*,\s*"audit"`, "},"+extra+`], "audit"`)
		}
		write := func(name, d string) string {
			p := filepath.Join(h.in, name)
			if err := os.WriteFile(p, []byte(d), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		before := h.snapshot(t)

		// An entry among the session's own: refused, nothing changes.
		_, err = h.svc.SessionImport(ctx, schema.SessionImportParams{Harness: "bridge",
			Path: write("middle.json", hijack(newEntry("e_mid", 2, branch[0].ID), true))})
		if core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "only gains entries after its own") {
			t.Fatalf("an entry among the session's own: %v", err)
		}
		if after := h.snapshot(t); after[v.ID] != before[v.ID] {
			t.Fatalf("a refused import changed the session:\n%s\n%s", before[v.ID], after[v.ID])
		}

		// New entries after the session's own, with every head field changed.
		out, err := h.svc.SessionImport(ctx, schema.SessionImportParams{Harness: "bridge",
			Path: write("after.json", hijack(newEntry("e_new1", last.Seq+1, last.ID)+","+newEntry("e_new2", last.Seq+2, "e_new1"), false))})
		if err != nil || out.Entries != 2 {
			t.Fatalf("import = %+v, %v; want 2 entries added", out, err)
		}
		got, err := h.db.GetSession(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != v.Title || got.NativeSessionID != "native-own" || got.Archived || got.HeadID != v.HeadID ||
			got.UpdatedAt != v.UpdatedAt || got.LatestCheckpointID != v.LatestCheckpointID {
			t.Fatalf("the head fields moved:\nbefore %+v\nafter  %+v", v, got)
		}
		if b := h.branch(v.ID); len(b) != len(branch) || b[len(b)-1].ID != last.ID {
			t.Fatalf("the active branch changed: %v", kinds(b))
		}
		for _, id := range []string{"e_new1", "e_new2"} {
			if e, err := h.db.GetEntry(ctx, id); err != nil || e.SessionID != v.ID {
				t.Fatalf("entry %s: %+v, %v", id, e, err)
			}
		}
		var was, now core.SessionDump
		_ = json.Unmarshal([]byte(before[v.ID]), &was)
		if now, err = h.db.Dump(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		if a, b := mustJSON(t, was.Entries), mustJSON(t, now.Entries[:len(was.Entries)]); a != b {
			t.Fatalf("the session's own entries changed:\n%s\n%s", a, b)
		}
		// Again: nothing new.
		if out, err := h.svc.SessionImport(ctx, schema.SessionImportParams{Harness: "bridge", Path: filepath.Join(h.in, "after.json")}); err != nil || out.Entries != 0 {
			t.Fatalf("second import = %+v, %v", out, err)
		}
		// The session goes on in its own order.
		h.prompt(v.ID, "say still mine")
		b := h.branch(v.ID)
		if n := b[len(b)-1]; n.Seq <= last.Seq+2 || n.ParentID == "e_new2" {
			t.Fatalf("the next entry is %+v; want it after seq %d, under the session's own head", n, last.Seq+2)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
