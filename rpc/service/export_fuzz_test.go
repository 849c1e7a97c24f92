package service_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// fuzzExport is a small, valid Bridge export (the fuzzer's starting point;
// more seeds are in testdata/fuzz/FuzzImportExport).
const fuzzExport = `{"format": "bridge.session", "version": 1,
  "session": {"sessionId": "s_f", "harness": "fake", "cwd": "/w", "title": "t", "headId": "e_2", "archived": false,
    "createdAt": "2026-01-02T03:04:05Z", "updatedAt": "2026-01-02T03:04:06Z"},
  "entries": [
    {"id": "e_1", "sessionId": "s_f", "seq": 1, "kind": "user.message", "payload": {"text": "hello"}, "createdAt": "2026-01-02T03:04:05Z"},
    {"id": "e_2", "sessionId": "s_f", "parentId": "e_1", "seq": 2, "kind": "assistant.message", "payload": {"text": "hi"}, "tokenEstimate": 3, "createdAt": "2026-01-02T03:04:06Z"}
  ],
  "audit": [{"source": "test", "kind": "test.noted", "entity": "s_f", "body": {"n": 1}, "time": "2026-01-02T03:04:07Z"}],
  "attachments": []
}
`

// FuzzImportExport feeds arbitrary documents to `import --harness bridge`
// (session/import) of one record holding another session. An import never
// panics and never fails with an internal error; it is refused, or the
// session it names reads back whole as valid UTF-8 JSON; the other session
// (s_v, which seeds name too) keeps its head fields, entries and audit
// records, and nothing is written outside the data directory. `go
// test` runs the seeds; `go test -fuzz=FuzzImportExport ./rpc/service`
// explores further.
func FuzzImportExport(f *testing.F) {
	f.Add([]byte(fuzzExport))
	f.Add([]byte(fuzzExport + fuzzExport))
	ctx := context.Background()
	root := f.TempDir()
	data, in := filepath.Join(root, "data"), filepath.Join(root, "in")
	for _, d := range []string{data, in} {
		if err := os.Mkdir(d, 0o700); err != nil {
			f.Fatal(err)
		}
	}
	db, err := storage.Open(ctx, filepath.Join(data, "bridge.db"), storage.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	svc, err := service.New(service.Options{Store: db, Hosts: []core.BridgeHost{fake.New(fake.Options{})},
		Notifier: servicetest.NewRecorder(), DataDir: data, NoShutdownCheckpoint: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { svc.Close(context.Background()) })
	victim, err := db.CreateSession(ctx, core.Session{ID: "s_v", Harness: "fake", Cwd: "/v", Title: "victim", NativeSessionID: "n_v"})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := db.Append(ctx, victim.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: json.RawMessage(`{"text":"mine"}`)}); err != nil {
		f.Fatal(err)
	}
	dump := func(t *testing.T, id string) core.SessionDump {
		d, err := db.Dump(ctx, id)
		if err != nil {
			t.Fatalf("dump %s: %v", id, err)
		}
		return d
	}
	// own is what an import may not change of the victim: its head
	// fields, its own entries and its audit records (it may gain entries
	// after its own).
	own := func(t *testing.T) string {
		d := dump(t, victim.ID)
		b, _ := json.Marshal([]any{d.Session, d.Entries[:1], d.Audit})
		return string(b)
	}
	before := ""
	path := filepath.Join(in, "doc.json")
	f.Fuzz(func(t *testing.T, doc []byte) {
		if before == "" {
			before = own(t)
		}
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := svc.SessionImport(ctx, schema.SessionImportParams{Harness: "bridge", Path: path})
		if err != nil {
			if c := core.ErrorCode(err); c == core.CodeInternal || c == "" {
				t.Fatalf("import failed with %q: %v", c, err)
			}
		} else {
			b, _ := json.Marshal(dump(t, out.SessionID))
			if !utf8.Valid(b) {
				t.Fatalf("session %s reads back with invalid UTF-8", out.SessionID)
			}
			if _, err := svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: out.SessionID}); err != nil && core.ErrorCode(err) != core.CodeCorrupt {
				t.Fatalf("history of the imported session: %v", err)
			}
		}
		if got := own(t); got != before {
			t.Fatalf("the other session changed:\n%s\n%s", before, got)
		}
		ents, err := os.ReadDir(in)
		if err != nil || len(ents) != 1 {
			t.Fatalf("files beside the input: %v %v", ents, err)
		}
	})
}
