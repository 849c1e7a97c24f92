package service_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/campaign"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// Environment of the child process of TestCheckpointCommitCrash.
const (
	envCrashDB    = "BRIDGE_TEST_CRASH_DB"
	envCrashPoint = "BRIDGE_TEST_CRASH_POINT" // die at this write point of Checkpoint (0: never)
)

// crashChild runs in the child process: a session with work, then a
// checkpoint during which the process dies (exit 137, no cleanup) at the
// N-th statement of a write transaction. It prints the number of points it
// passed when it did not die.
func crashChild(t *testing.T) {
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv(envCrashPoint))
	var armed atomic.Bool
	var seen atomic.Int64
	db, err := storage.Open(ctx, os.Getenv(envCrashDB), storage.Options{Hook: func(point string) {
		if armed.Load() && seen.Add(1) == int64(n) {
			os.Exit(137)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Options{Store: db, Notifier: servicetest.NewRecorder(), DataDir: t.TempDir(),
		Hosts: []core.BridgeHost{fake.New(fake.Options{Script: scriptFor(map[string][]fake.Step{
			"Bridge checkpoint request": {jsonStep(`{"summary": "crash trial", "decisions": ["keep going"]}`)},
		})})}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := svc.SessionCreate(ctx, schema.SessionCreateParams{Harness: "fake", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.SessionID, Content: []schema.Content{{Type: "text", Text: "decide use one transaction\nfile src/commit.go\nsay done"}}}); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if _, err := svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.SessionID, Reason: "manual"}); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("points=%d\n", seen.Load())
	svc.Close(ctx)
	db.Close()
}

// TestCheckpointCommitCrash kills the process at every write step of a
// checkpoint (the request, the exchange with the session, each statement of
// the commit transaction), 50 trials (200 with BRIDGE_CAMPAIGN=nightly), and checks the reopened record: the
// whole checkpoint (checkpoint, boundary, marker as head, latest checkpoint,
// evidence audit row) or none of it, and a clean integrity report.
func TestCheckpointCommitCrash(t *testing.T) {
	if os.Getenv(envCrashDB) != "" {
		crashChild(t)
		return
	}
	run := func(point int) (string, int) {
		dir := t.TempDir()
		path := filepath.Join(dir, "bridge.db")
		cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointCommitCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCrashDB+"="+path, envCrashPoint+"="+strconv.Itoa(point))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != 0 && code != 137 {
			t.Fatalf("child (point %d) failed with %d:\n%s", point, code, out)
		}
		return path, code
	}
	// A dry run counts the write points of one checkpoint.
	points := countPoints(t)
	if points < 7 {
		t.Fatalf("a checkpoint passed only %d write points", points)
	}
	outcomes := map[bool]int{}
	for trial := 0; trial < campaign.Count(50, 200); trial++ {
		point := 1 + trial%(points+1) // points+1: the run that does not die
		path, code := run(point)
		outcomes[checkAllOrNothing(t, path, point, code)]++
	}
	// Deaths before the commit leave nothing; deaths after it (none here:
	// the commit is the last write) and the runs that do not die leave all.
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Fatalf("outcomes %v: the trials never hit both sides of the commit", outcomes)
	}
	t.Logf("%d write points per checkpoint; %d trials left the whole checkpoint, %d none of it", points, outcomes[true], outcomes[false])
}

// countPoints runs the child with a hook that never fires and reads how
// many write points its checkpoint passed.
func countPoints(t *testing.T) int {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointCommitCrash$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envCrashDB+"="+filepath.Join(dir, "bridge.db"), envCrashPoint+"=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	var n int
	for _, line := range splitLines(string(out)) {
		if _, err := fmt.Sscanf(line, "points=%d", &n); err == nil {
			return n
		}
	}
	t.Fatalf("dry run printed no point count:\n%s", out)
	return 0
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// checkAllOrNothing reports whether the whole checkpoint is there, failing
// the test when only part of it is.
func checkAllOrNothing(t *testing.T, path string, point, code int) bool {
	t.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatalf("point %d: reopen: %v", point, err)
	}
	defer db.Close()
	rep, err := db.Integrity(ctx)
	if err != nil || !rep.Clean() {
		t.Fatalf("point %d: integrity %+v %v", point, rep, err)
	}
	list, _, err := db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
	if err != nil || len(list) != 1 {
		t.Fatalf("point %d: sessions %v %v", point, list, err)
	}
	s := list[0]
	branch, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	count := map[core.Kind]int{}
	var cpID string
	for _, e := range branch {
		count[e.Kind]++
		if e.Kind == core.KindCheckpoint {
			cpID = e.ID
		}
	}
	audit, err := db.Audit(ctx, s.ID, checkpoint.AuditEvidenceVerified)
	if err != nil {
		t.Fatal(err)
	}
	whole := count[core.KindCheckpoint] == 1 && count[core.KindCompaction] == 1 && count[core.KindBranchSummary] == 1 &&
		len(audit) == 1 && s.LatestCheckpointID == cpID && branch[len(branch)-1].Kind == core.KindBranchSummary &&
		s.HeadID == branch[len(branch)-1].ID
	none := count[core.KindCheckpoint] == 0 && count[core.KindCompaction] == 0 && count[core.KindBranchSummary] == 0 &&
		len(audit) == 0 && s.LatestCheckpointID == ""
	if !whole && !none {
		t.Fatalf("point %d (exit %d): part of a checkpoint survived: kinds %v, audit rows %d, latest %q, head %q",
			point, code, count, len(audit), s.LatestCheckpointID, s.HeadID)
	}
	if code == 0 && !whole {
		t.Fatalf("point %d: the process did not die, yet the checkpoint is missing", point)
	}
	return whole
}
