package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// handoffLines makes the fake's next session (the summary worker) answer
// with a five-part handoff.
const handoffLines = "say noted\n" +
	"worker say ## Goal\nworker say Finish the parser.\n" +
	"worker say ## Current state\nworker say The tests pass.\n" +
	"worker say ## Key decisions & conventions\nworker say One transaction per write.\n" +
	"worker say ## Key files\nworker say - src/commit.go\n" +
	"worker say ## Next step\nworker say Ship it."

// TestPreviewExecutesOnce: 20 trials of two processes executing one
// preview at the same moment create exactly one target; the other is
// refused as already executed, and so is the process that made the
// preview when it is asked next. On both stores.
func TestPreviewExecutesOnce(t *testing.T) { eachStore(t, testPreviewExecutesOnce) }

func testPreviewExecutesOnce(t *testing.T, st storeKind) {
	dir := st.dataDir(t, nil)
	a := startBridge(t, dir)
	a.initialize(nil)
	src := createFake(t, a)
	db := openRecord(t, dir)
	for trial := range 20 {
		rpctest.Must(a.Client, a.SessionPrompt, schema.SessionPromptParams{SessionID: src, Content: prompt(handoffLines)})
		p := rpctest.Must(a.Client, a.MigrationPreview, schema.MigrationPreviewParams{SessionID: src, Target: schema.MigrationTarget{Model: "fake-small"}})
		if p.PreviewID == "" {
			t.Fatalf("trial %d: no preview id", trial)
		}
		type run struct {
			cmd      *exec.Cmd
			out, err bytes.Buffer
		}
		runs := []*run{{}, {}}
		for _, r := range runs {
			r.cmd = exec.Command(binPath, "--data-dir", dir, "migrate", "execute", p.PreviewID, "--json")
			r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
		}
		for _, r := range runs {
			if err := r.cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		ok, refused := 0, 0
		for _, r := range runs {
			err := r.cmd.Wait()
			switch {
			case err == nil:
				ok++
			case strings.Contains(r.out.String(), `"conflict"`) && strings.Contains(r.out.String(), "already executed"):
				refused++
			default:
				t.Fatalf("trial %d: execute failed otherwise: %v\n%s\n%s", trial, err, r.out.String(), r.err.String())
			}
		}
		if ok != 1 || refused != 1 {
			t.Fatalf("trial %d: %d executions succeeded and %d were refused, want 1 and 1", trial, ok, refused)
		}
		if e := rpctest.ErrorOf(a.MigrationExecute(t.Context(), schema.MigrationExecuteParams{PreviewID: p.PreviewID})); e == nil || e.DataCode() != "conflict" {
			t.Fatalf("trial %d: the process that made the preview executed it again (error %+v)", trial, e)
		}
		targets := queryInt(t, db, `SELECT count(DISTINCT session_id) FROM entries WHERE kind = 'migration.handoff' AND payload LIKE $1`,
			`%"previewId":"`+p.PreviewID+`"%`)
		if targets != 1 {
			t.Fatalf("trial %d: preview %s created %d target sessions, want exactly 1", trial, p.PreviewID, targets)
		}
	}
}
