package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// pgDataDir is a data directory whose config.json names the PostgreSQL
// record url and a session lease of leaseSeconds.
func pgDataDir(t *testing.T, url string, leaseSeconds float64) string {
	t.Helper()
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"store": url, "sessionLeaseSeconds": leaseSeconds})
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStorePostgresHidesThePassword: doctor on a PostgreSQL record names
// it without the password; a refused login and an unreachable server are
// errors that name the store, never the password.
func TestStorePostgresHidesThePassword(t *testing.T) {
	raw := pgtest.URL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	if password == "" {
		t.Fatalf("the test server's URL has no password to hide: %s", redactURL(raw))
	}
	dir := t.TempDir()
	out, stderr, code := runCLI(t, nil, "--data-dir", dir, "--store", raw, "doctor", "--harness", "fake")
	if code != 0 {
		t.Fatalf("doctor on PostgreSQL: exit %d: %s%s", code, out, stderr)
	}
	if !strings.Contains(out, "database: "+redactURL(raw)+" (schema version") {
		t.Errorf("doctor does not name the PostgreSQL record as %s:\n%s", redactURL(raw), out)
	}
	if strings.Contains(out+stderr, password) {
		t.Errorf("doctor printed the password:\n%s%s", out, stderr)
	}

	wrong := *u
	wrong.User = url.UserPassword(u.User.Username(), "Wr0ngPassw0rd")
	bad := wrong.String()
	unreachable := "postgres://bridge:Unr3achable@127.0.0.1:1/team?connect_timeout=5"
	for _, c := range []struct{ name, url, secret string }{{"wrong password", bad, "Wr0ngPassw0rd"}, {"unreachable", unreachable, "Unr3achable"}} {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range [][]string{{"sessions"}, {"sessions", "--json"}} {
				out, stderr, code := runCLI(t, []string{"BRIDGE_STORE=" + c.url}, append([]string{"--data-dir", dir}, args...)...)
				if code != 1 {
					t.Fatalf("exit %d, want 1: %s%s", code, out, stderr)
				}
				if strings.Contains(out+stderr, c.secret) {
					t.Errorf("the error shows the password: %s%s", out, stderr)
				}
				if !strings.Contains(out+stderr, redactURL(c.url)) {
					t.Errorf("the error does not name the store %s: %s%s", redactURL(c.url), out, stderr)
				}
			}
		})
	}
}

// TestStorePostgresLiveAcrossProcesses: two `bridge serve` processes (two
// machines' worth: their own data directories) on one PostgreSQL record.
// What B's harness does reaches A's client as session/update; A refuses to
// drive B's live session (live_elsewhere); when B is killed (kill -9, no
// release) A may resume it once the lease lapses, and does so honestly
// (not "hot").
func TestStorePostgresLiveAcrossProcesses(t *testing.T) {
	raw := pgtest.URL(t)
	a := startBridge(t, pgDataDir(t, raw, 3))
	b := startBridge(t, pgDataDir(t, raw, 3))
	a.initialize(nil)
	b.initialize(nil)
	sid := createFake(t, b)
	// A's LISTEN may start a moment after initialize: B speaks until A hears.
	heard := func(text string) func(wireMsg) bool {
		return func(m wireMsg) bool {
			return m.Method == "session/update" && strings.Contains(string(m.Params), sid) && strings.Contains(string(m.Params), text)
		}
	}
	for i := 0; ; i++ {
		rpctest.Must(b.Client, b.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say warming up")})
		if len(notesMatching(a, heard("warming up"))) > 0 {
			break
		}
		if i == 100 {
			t.Fatalf("A never heard B's session; A's stderr:\n%s", a.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	rpctest.Must(b.Client, b.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say the answer from machine B")})
	a.awaitNote("B's answer", heard("the answer from machine B"))

	e := rpctest.ErrorOf(a.SessionPrompt(t.Context(), schema.SessionPromptParams{SessionID: sid, Content: prompt("say from A")}))
	if e == nil || e.DataCode() != "live_elsewhere" {
		t.Fatalf("A prompting B's live session: %+v, want live_elsewhere", e)
	}
	var data struct{ Detail string }
	_ = json.Unmarshal(e.Data, &data)
	if !strings.Contains(data.Detail, "lease held by") {
		t.Errorf("live_elsewhere's detail does not name the owner: %s", e.Data)
	}

	// B dies without releasing its lease.
	_ = b.cmd.Process.Kill()
	var res schema.SessionResumeResult
	for i := 0; ; i++ {
		var err error
		res, err = a.SessionResume(t.Context(), schema.SessionResumeParams{SessionID: sid})
		e := rpctest.ErrorOf(res, err)
		if e == nil {
			break
		}
		if e.DataCode() != "live_elsewhere" || i == 600 {
			t.Fatalf("resume after B died: %+v", e)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.Mode == "" || res.Mode == "hot" {
		t.Fatalf("A resumed B's session as %q, want an honest cold mode", res.Mode)
	}
	rpctest.Must(a.Client, a.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say A drives it now")})
}

// notesMatching returns c's notifications so far that pred accepts.
func notesMatching(c *client, pred func(wireMsg) bool) []wireMsg {
	var out []wireMsg
	for _, n := range c.notes() {
		if pred(n) {
			out = append(out, n)
		}
	}
	return out
}

// TestStorePostgresWebTabSeesAnotherMachine: a `bridge web` tab on one
// PostgreSQL record shows, as session/update notifications, a session that
// a `bridge serve` process elsewhere (its own data directory) is running.
// The delay from the serve reply to the tab's notice is logged, not
// asserted.
func TestStorePostgresWebTabSeesAnotherMachine(t *testing.T) {
	raw := pgtest.URL(t)
	webTabSeesAnotherProcess(t, pgDataDir(t, raw, 30), pgDataDir(t, raw, 30))
}

// TestStoreSQLiteWebTabSeesAnotherProcess: a `bridge web` and a `bridge
// serve` on one data directory (one SQLite file): the web tab sees the
// session the serve process runs, updating, turn by turn.
func TestStoreSQLiteWebTabSeesAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	webTabSeesAnotherProcess(t, dir, dir)
}

// webTabSeesAnotherProcess starts a bridge web on webDir and a bridge
// serve on serveDir sharing its record; a tab of the web process hears
// every turn the serve process's session takes.
func webTabSeesAnotherProcess(t *testing.T, webDir, serveDir string) {
	w := startWeb(t, webDir)
	tab := w.dial(t)
	tab.initialize(nil)
	b := startBridge(t, serveDir)
	b.initialize(nil)
	sid := createFake(t, b)
	heard := func(text string) func(wireMsg) bool {
		return func(m wireMsg) bool {
			return m.Method == "session/update" && strings.Contains(string(m.Params), sid) && strings.Contains(string(m.Params), text)
		}
	}
	for i := 0; len(notesMatching(tab, heard("warming up"))) == 0; i++ {
		if i == 100 {
			t.Fatalf("the tab never heard the other process's session; web stderr:\n%s", w.stderrText())
		}
		rpctest.Must(b.Client, b.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say warming up")})
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 5 {
		text := "turn " + string(rune('a'+i)) + " from the other process"
		rpctest.Must(b.Client, b.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say " + text)})
		replied := time.Now()
		tab.awaitNote(text, heard(text))
		t.Logf("the tab saw turn %d %v after the serve process answered", i, time.Since(replied))
	}
}
