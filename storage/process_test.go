package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

const helperEnv = "BRIDGE_STORAGE_HELPER"

// TestHelperProcess is not a test: it is the child process body of the
// multi-process tests, selected by BRIDGE_STORAGE_HELPER.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	var err error
	switch mode {
	case "append":
		err = helperAppend()
	case "crash":
		err = helperCrash()
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helperAppend appends BRIDGE_N entries from two goroutines.
func helperAppend() error {
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv("BRIDGE_N"))
	tag, sid := os.Getenv("BRIDGE_TAG"), os.Getenv("BRIDGE_SESSION")
	db, err := storage.Open(ctx, os.Getenv("BRIDGE_DB"), storage.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += 2 {
				if _, err := db.Append(ctx, sid, user(fmt.Sprintf("%s-%d", tag, i))); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// crashPoints is the number of hook points one crash-test Update passes.
const crashPoints = 10

// helperCrash runs one multi-write Update and dies at hook point
// BRIDGE_CRASH_AT (1-based); past crashPoints it completes.
func helperCrash() error {
	ctx := context.Background()
	at, _ := strconv.Atoi(os.Getenv("BRIDGE_CRASH_AT"))
	kill := os.Getenv("BRIDGE_KILL") == "1"
	sid, title := os.Getenv("BRIDGE_SESSION"), os.Getenv("BRIDGE_TAG")
	seen := 0
	hook := func(point string) {
		seen++
		if seen == at {
			if kill {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			os.Exit(137)
		}
	}
	db, err := storage.Open(ctx, os.Getenv("BRIDGE_DB"), storage.Options{Hook: hook})
	if err != nil {
		return err
	}
	defer db.Close()
	err = db.Update(ctx, func(w core.Writer) error {
		// 3 entry.insert + session.head
		if _, err := w.Append(ctx, sid, user(title+"-u"), tool(title+"-t"), assistant(title+"-a")); err != nil {
			return err
		}
		// audit.insert
		if err := w.AppendAudit(ctx, core.AuditRecord{Source: "crash", Kind: "trial", Entity: sid,
			Body: json.RawMessage(`{"title":"` + title + `"}`)}); err != nil {
			return err
		}
		// session.update
		if _, err := w.PatchSession(ctx, sid, core.SessionPatch{Title: core.Ptr(title)}); err != nil {
			return err
		}
		// 2 entry.insert + session.head, then commit.before
		_, err := w.Append(ctx, sid, user(title+"-u2"), assistant(title+"-a2"))
		return err
	})
	if err == nil && seen != crashPoints {
		return fmt.Errorf("the Update passed %d hook points, the test expects %d", seen, crashPoints)
	}
	return err
}

func helper(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

func TestTwoProcessesAppendConcurrently(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := newSession(t, db)
	const perChild = 500
	var cmds []*exec.Cmd
	outs := make([][]byte, 2)
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		cmd := helper(t, helperEnv+"=append", "BRIDGE_DB="+path, "BRIDGE_SESSION="+s.ID,
			"BRIDGE_N="+strconv.Itoa(perChild), fmt.Sprintf("BRIDGE_TAG=c%d", c))
		cmds = append(cmds, cmd)
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("child %d: %v\n%s", c, err, out)
			}
			outs[c] = out
		}(c)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	br, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE session_id = ?`, s.ID).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != 2*perChild || len(br) != 2*perChild {
		t.Fatalf("entries: %d in session, %d on the branch; want %d", total, len(br), 2*perChild)
	}
	texts := map[string]bool{}
	for i, e := range br {
		if e.Seq != int64(i+1) {
			t.Fatalf("branch position %d has seq %d", i, e.Seq)
		}
		if i > 0 && e.ParentID != br[i-1].ID {
			t.Fatalf("chain broken at seq %d", e.Seq)
		}
		var p struct{ Text string }
		_ = json.Unmarshal(e.Payload, &p)
		if texts[p.Text] {
			t.Fatalf("entry %q appears twice", p.Text)
		}
		texts[p.Text] = true
	}
	for c := 0; c < 2; c++ {
		for i := 0; i < perChild; i++ {
			if k := fmt.Sprintf("c%d-%d", c, i); !texts[k] {
				t.Fatalf("entry %q was lost", k)
			}
		}
	}
	rep, err := db.Integrity(ctx)
	if err != nil || !rep.Clean() {
		t.Fatalf("Integrity = %+v, %v", rep, err)
	}
}

func TestCrashMidUpdateIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("start"))
	db.Close()

	wantEntries, wantAudit, wantTitle := 1, 0, ""
	for trial := 0; trial < 20; trial++ {
		at := 1 + rng.IntN(crashPoints+1) // crashPoints+1 means: no crash
		title := fmt.Sprintf("trial-%d", trial)
		cmd := helper(t, helperEnv+"=crash", "BRIDGE_DB="+path, "BRIDGE_SESSION="+s.ID, "BRIDGE_TAG="+title,
			"BRIDGE_CRASH_AT="+strconv.Itoa(at), "BRIDGE_KILL="+strconv.Itoa(trial%2))
		out, err := cmd.CombinedOutput()
		crashed := at <= crashPoints
		var exit *exec.ExitError
		switch {
		case crashed && !errors.As(err, &exit):
			t.Fatalf("trial %d: child should have died at point %d: %v\n%s", trial, at, err, out)
		case !crashed && err != nil:
			t.Fatalf("trial %d: child failed: %v\n%s", trial, err, out)
		}
		if !crashed {
			wantEntries += 5
			wantAudit++
			wantTitle = title
		}

		db, err := storage.Open(ctx, path, storage.Options{})
		if err != nil {
			t.Fatalf("trial %d: reopen: %v", trial, err)
		}
		br, err := db.ActiveBranch(ctx, s.ID)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		got, err := db.GetSession(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		aud, err := db.Audit(ctx, s.ID, "trial")
		if err != nil {
			t.Fatal(err)
		}
		var total int
		if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&total); err != nil {
			t.Fatal(err)
		}
		if len(br) != wantEntries || total != wantEntries || len(aud) != wantAudit || got.Title != wantTitle {
			t.Fatalf("trial %d (stop at point %d of %d): branch %d, entries %d, audit %d, title %q; want %d, %d, %d, %q",
				trial, at, crashPoints, len(br), total, len(aud), got.Title, wantEntries, wantEntries, wantAudit, wantTitle)
		}
		rep, err := db.Integrity(ctx)
		if err != nil || !rep.Clean() {
			t.Fatalf("trial %d: Integrity = %+v, %v", trial, rep, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
