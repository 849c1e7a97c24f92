package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// harnessEnv is one isolated setup for driving the real harness programs
// through the bridge binary: a fake model server in this process, a data
// directory whose config.json points claude-code and codex at it, and
// private HOME, CLAUDE_CONFIG_DIR and CODEX_HOME folders. The bridge
// process and the harnesses it starts inherit nothing from the user's own
// configuration.
type harnessEnv struct {
	fake      *fakemodel.Server
	dataDir   string
	cwd       string
	home      string
	claudeDir string
	codexHome string
	claudeBin string
	codexBin  string
	// dsh is the real DeepSeek Harness (harnessOptions.DSH), else nil.
	dsh *dshtest.Real

	mu      sync.Mutex
	replies []scriptedReply
	config  map[string]any // what config.json holds
}

// scriptedReply answers requests whose last user text contains match
// (first match wins, in the order added).
type scriptedReply struct {
	match string
	reply func(fakemodel.Request) fakemodel.Reply
}

// harnessOptions tune newHarnessEnv.
type harnessOptions struct {
	// CheckpointTimeoutSeconds is written to config.json (0: the default).
	CheckpointTimeoutSeconds int
	// Config holds more top-level config.json keys.
	Config map[string]any
	// CodexArgs are extra `codex app-server` arguments.
	CodexArgs []string

	// DSH starts the real DeepSeek Harness web server (dshtest.StartReal)
	// against the same fake model server and configures the dsh harness
	// with its URL.
	DSH bool
	// DSHURL configures the dsh harness with this server instead (a fake
	// DSH web server).
	DSHURL string
	// Store is where the record lives (the zero value: SQLite in the data
	// directory).
	Store storeKind
}

// onShutdown is the config of a test that looks at the before_shutdown
// checkpoint, which newHarnessEnv turns off by default.
var onShutdown = map[string]any{"checkpointOnShutdown": true}

// newHarnessEnv finds claude and codex (failing the test if either is
// missing), starts the fake model server and writes config.json.
func newHarnessEnv(t *testing.T, o harnessOptions) *harnessEnv {
	t.Helper()
	h := &harnessEnv{claudeBin: adaptertest.FindBinary(t, "claude"), codexBin: adaptertest.FindBinary(t, "codex")}
	srv, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h.fake = srv
	srv.Responder(h.respond)
	root := t.TempDir()
	h.dataDir = filepath.Join(root, "data")
	h.cwd = filepath.Join(root, "project")
	h.home = filepath.Join(root, "home")
	h.claudeDir = filepath.Join(h.home, ".claude")
	h.codexHome = filepath.Join(root, "codex-home")
	for _, d := range []string{h.dataDir, h.cwd, h.home, h.claudeDir, h.codexHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h.codexHome, "config.toml"), []byte(fakemodel.CodexConfig(srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"harnesses": map[string]any{
			"claude-code": map[string]any{
				"command": h.claudeBin,
				"env": map[string]string{
					"ANTHROPIC_BASE_URL":                       srv.URL,
					"ANTHROPIC_API_KEY":                        "sk-ant-dummy-for-tests",
					"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
					"DISABLE_TELEMETRY":                        "1",
					"DISABLE_AUTOUPDATER":                      "1",
					"DISABLE_ERROR_REPORTING":                  "1",
					"HOME":                                     h.home,
				},
				"options": map[string]any{"configDir": h.claudeDir},
			},
			"codex": map[string]any{
				"command": h.codexBin,
				"env":     map[string]string{"FAKE_API_KEY": "sk-fake", "RUST_LOG": "error", "NO_COLOR": "1", "HOME": h.home},
				"options": map[string]any{"codexHome": h.codexHome},
				"args":    o.CodexArgs,
			},
			"opencode": map[string]any{"disabled": true},
		},
	}
	if o.DSH {
		h.dsh = dshtest.StartReal(t, srv.URL)
		o.DSHURL = h.dsh.URL
	}
	if o.DSHURL != "" {
		sec := map[string]any{"options": map[string]any{"url": o.DSHURL, "pollMs": 20, "forkServer": false}}
		if h.dsh != nil {
			// The real DSH: checkpoint forks on a fork server Bridge starts
			// with the same program and model server, reading the live
			// server's DSH_HOME.
			command, args, env := h.dsh.ForkProgram()
			envMap := map[string]string{}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				envMap[k] = v
			}
			sec = map[string]any{"command": command, "args": args, "env": envMap,
				"options": map[string]any{"url": o.DSHURL, "pollMs": 20, "home": h.dsh.Home}}
		}
		cfg["harnesses"].(map[string]any)["dsh"] = sec
	}
	// Limits a loaded machine meets: a checkpoint reply takes seconds on a
	// quiet machine and more than the 30 s default at load 25, and the
	// before_shutdown checkpoints (a fork each: a harness process start)
	// missed the 20 s default there. A test of a limit sets its own
	// (CheckpointTimeoutSeconds, Config); the others wait only as long as
	// the harness takes.
	cfg["checkpointTimeoutSeconds"] = 120
	cfg["shutdownCheckpointSeconds"] = 300
	if o.CheckpointTimeoutSeconds > 0 {
		cfg["checkpointTimeoutSeconds"] = o.CheckpointTimeoutSeconds
	}
	// A test's end closes Bridge's input, and Bridge's default is to write
	// a before_shutdown checkpoint of every session with new work, by a
	// real harness against the fake model: tens of seconds that no test
	// but the shutdown tests looks at (startBridge's cleanup killed Bridge
	// after 10 s of it, in most tests). The shutdown tests turn it on.
	cfg["checkpointOnShutdown"] = false
	if u := o.Store.url(t, h.dataDir); u != "" {
		cfg["store"] = u
	}
	for k, v := range o.Config {
		cfg[k] = v
	}
	h.config = cfg
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dataDir, ConfigFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// on makes the fake model answer requests whose last user text contains
// match with reply (evaluated per request).
func (h *harnessEnv) on(match string, reply func(fakemodel.Request) fakemodel.Reply) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.replies = append(h.replies, scriptedReply{match: match, reply: reply})
}

// onText is on with a fixed text reply.
func (h *harnessEnv) onText(match, text string) {
	h.on(match, func(fakemodel.Request) fakemodel.Reply { return fakemodel.Reply{Text: text} })
}

// respond is the fake server's Responder.
func (h *harnessEnv) respond(r fakemodel.Request) (fakemodel.Reply, bool) {
	h.mu.Lock()
	rs := append([]scriptedReply(nil), h.replies...)
	h.mu.Unlock()
	for _, s := range rs {
		if strings.Contains(r.LastUserText, s.match) {
			return s.reply(r), true
		}
	}
	return fakemodel.Reply{}, false
}

// start runs `bridge serve` on the data directory and initializes it.
func (h *harnessEnv) start(t *testing.T) *client {
	t.Helper()
	c := startBridge(t, h.dataDir)
	c.initialize(nil)
	return c
}

// create starts a session of harness in the project folder.
func (h *harnessEnv) create(t *testing.T, c *client, harness, title string) string {
	t.Helper()
	s, err := c.SessionCreate(t.Context(), schema.SessionCreateParams{Harness: harness, Cwd: h.cwd, Title: title})
	if err != nil || s.SessionID == "" || s.Harness != harness || s.NativeSessionID == "" {
		t.Fatalf("session/create %s = %+v, %v: want a session id and the harness's own id", harness, s, err)
	}
	return s.SessionID
}

// say runs one prompt turn and checks it ended normally.
func say(t *testing.T, c *client, sid, text string) {
	t.Helper()
	pr, err := c.SessionPrompt(t.Context(), schema.SessionPromptParams{SessionID: sid, Content: prompt(text)})
	must(t, "session/prompt "+text, err)
	if pr.StopReason != "end_turn" {
		t.Fatalf("session/prompt %q: stopReason %q, want end_turn", text, pr.StopReason)
	}
}

// history returns a session's whole active branch as the client sees it.
func history(t *testing.T, c *client, sid string) []schema.Entry {
	t.Helper()
	hist, err := c.SessionHistory(t.Context(), schema.SessionHistoryParams{SessionID: sid, MaxMessages: 10000})
	must(t, "session/history", err)
	if hist.HasMore {
		t.Fatalf("session/history of %s still has more after 10000 messages", sid)
	}
	return hist.Entries
}

// kinds lists the entries' kinds.
func kinds(es []schema.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Kind
	}
	return out
}

// payloadOf decodes an entry payload.
func payloadOf(t *testing.T, e schema.Entry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("payload of %s %s: %v", e.Kind, e.ID, err)
	}
	return m
}

// openDB opens the data directory's record (openRecord); it may be open
// in a running bridge process too (WAL lets both read).
func (h *harnessEnv) openDB(t *testing.T) testRecord {
	t.Helper()
	return openRecord(t, h.dataDir)
}

// audit returns the audit rows of kind about session sid.
func audit(t *testing.T, db core.Store, sid, kind string) []core.AuditRecord {
	t.Helper()
	rs, err := db.Audit(context.Background(), sid, kind)
	if err != nil {
		t.Fatalf("audit %s: %v", kind, err)
	}
	return rs
}

// recordDigest is the number of a session's entries (every branch) and a
// sha256 over every stored column of each, in seq order, read straight
// from SQLite.
func recordDigest(t *testing.T, rec testRecord, sid string) (int, string) {
	t.Helper()
	db, ok := rec.(*storage.DB)
	if !ok {
		t.Fatalf("recordDigest reads a SQLite record, not a %T", rec)
	}
	rows, err := db.SQL().QueryContext(context.Background(),
		`SELECT id, COALESCE(parent_id, ''), seq, kind, payload, COALESCE(native_id, ''), token_estimate, created_at
		   FROM entries WHERE session_id = ? ORDER BY seq`, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sum := sha256.New()
	n := 0
	for rows.Next() {
		var id, parent, kind, payload, native string
		var seq, tokens, created int64
		if err := rows.Scan(&id, &parent, &seq, &kind, &payload, &native, &tokens, &created); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(sum, "%s\x00%s\x00%d\x00%s\x00%d:%s\x00%s\x00%d\x00%d\n", id, parent, seq, kind, len(payload), payload, native, tokens, created)
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n, hex.EncodeToString(sum.Sum(nil))
}

// requestText is every string inside a model request's JSON body, joined
// by newlines: what the model was shown, whatever the API's shape or JSON
// escaping.
func requestText(r fakemodel.Request) string {
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		return string(r.Body)
	}
	var parts []string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case string:
			parts = append(parts, x)
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return strings.Join(parts, "\n")
}

// requestsSince returns the fake server's requests from index from on.
func (h *harnessEnv) requestsSince(from int) []fakemodel.Request {
	rs := h.fake.Requests()
	if from > len(rs) {
		return nil
	}
	return rs[from:]
}

// findTranscript returns Claude Code's stored transcript of native session
// id under the isolated config folder.
func (h *harnessEnv) findTranscript(t *testing.T, native string) string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(filepath.Join(h.claudeDir, "projects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == native+".jsonl" {
			found = append(found, p)
		}
		return nil
	})
	if err != nil || len(found) != 1 {
		t.Fatalf("Claude Code transcript of %s under %s: %v (err %v)", native, h.claudeDir, found, err)
	}
	return found[0]
}

// sessionNative returns the harness's own session id recorded for sid.
func sessionNative(t *testing.T, db core.Store, sid string) string {
	t.Helper()
	s, err := db.GetSession(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.NativeSessionID == "" {
		t.Fatalf("session %s has no native session id recorded", sid)
	}
	return s.NativeSessionID
}

// writeConfig rewrites config.json from h.config.
func (h *harnessEnv) writeConfig(t *testing.T) {
	t.Helper()
	b, err := json.MarshalIndent(h.config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dataDir, ConfigFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
