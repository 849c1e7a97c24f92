package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// TestSessionsShowStatus: `bridge sessions` says how each session was
// left as recorded (its harness process ended, Bridge suspended it, or
// nothing known: idle), in the table and in --json, on both stores.
func TestSessionsShowStatus(t *testing.T) { eachStore(t, testSessionsShowStatus) }

func testSessionsShowStatus(t *testing.T, st storeKind) {
	ctx := context.Background()
	dir := st.dataDir(t, nil)
	db := openRecord(t, dir)
	want := map[string]schema.SessionStatus{}
	for _, c := range []struct {
		title, last string
		status      schema.SessionStatus
	}{{"stopped one", "stopped", schema.StatusEnded}, {"suspended one", "suspended", schema.StatusSuspended}, {"quiet one", "", schema.StatusIdle}} {
		s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w", Title: c.title})
		if err != nil {
			t.Fatal(err)
		}
		es := []core.NewEntry{{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": "hi"})}}
		if c.last != "" {
			es = append(es, core.NewEntry{Kind: core.KindSessionStatus, Payload: core.Payload(map[string]any{"status": c.last})})
		}
		if _, err := db.Append(ctx, s.ID, es...); err != nil {
			t.Fatal(err)
		}
		want[s.ID] = c.status
	}
	out, stderr, code := runCLI(t, nil, "--data-dir", dir, "sessions", "--json")
	if code != 0 {
		t.Fatalf("sessions --json: exit %d: %s", code, stderr)
	}
	var res schema.SessionListResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != len(want) {
		t.Fatalf("%d sessions listed, want %d", len(res.Items), len(want))
	}
	for _, x := range res.Items {
		if x.Status != want[x.SessionID] {
			t.Errorf("%s (%s): status %q, want %q", x.SessionID, x.Title, x.Status, want[x.SessionID])
		}
	}
	table, stderr, code := runCLI(t, nil, "--data-dir", dir, "sessions")
	if code != 0 {
		t.Fatalf("sessions: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if !strings.Contains(lines[0], "STATUS") || len(lines) != 4 {
		t.Fatalf("table:\n%s", table)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if st := want[f[0]]; !strings.Contains(l, " "+string(st)+" ") {
			t.Errorf("line %q does not say %s", l, st)
		}
	}
}
