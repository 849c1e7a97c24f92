package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// loadSeconds is how long TestLoadManySessions streams turns:
// BRIDGE_LOAD_SECONDS, else 15 s (CI). The campaign's form is two minutes:
//
//	BRIDGE_LOAD_SECONDS=120 go test -run TestLoadManySessions -timeout 20m ./cmd/bridge
func loadSeconds(t *testing.T) time.Duration {
	if v := os.Getenv("BRIDGE_LOAD_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("BRIDGE_LOAD_SECONDS=%q is not a positive number of seconds", v)
		}
		return time.Duration(n) * time.Second
	}
	return 15 * time.Second
}

// procStat is the resident memory (KiB) and open descriptors of a process.
func procStat(t *testing.T, pid int) (rssKiB, fds int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			rssKiB, _ = strconv.Atoi(f[1])
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return rssKiB, len(ents)
}

// TestLoadManySessions: 50 sessions stream turns (the fake harness)
// through one `bridge serve` for loadSeconds, each as fast as its turns
// are answered. Afterwards every acknowledged turn (a prompt answered
// end_turn) is in its session's record, exactly once and in order, with
// the harness's answer, and the server's descriptors and resident memory
// are back near where they stood before the load (no descriptor or memory
// kept per turn).
func TestLoadManySessions(t *testing.T) {
	const sessions = 50
	dir := t.TempDir()
	c := startBridge(t, dir)
	c.initialize(nil)
	pid := c.cmd.Process.Pid
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = createFake(t, c)
	}
	// Warm up as the load runs (every session at once, two turns each), so
	// that the start counts what the server keeps for any load: its
	// bounded connection pools, the live sessions.
	for round := 0; round < 2; round++ {
		var sent []string
		for _, id := range ids {
			sent = append(sent, c.Request("session/prompt", schema.SessionPromptParams{SessionID: id, Content: prompt("say warm")}))
		}
		for _, id := range sent {
			if m := c.Reply(id); m.Error != nil {
				t.Fatalf("warm-up: %s", m.Error.Message)
			}
		}
	}
	rss0, fds0 := procStat(t, pid)
	before := fdTargets(t, pid)

	dur := loadSeconds(t)
	deadline := time.Now().Add(dur)
	acked := make([][]int, sessions)
	var wg sync.WaitGroup
	peakRSS, peakFDs := rss0, fds0
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
				if r, f := procStat(t, pid); r > peakRSS || f > peakFDs {
					peakRSS, peakFDs = max(peakRSS, r), max(peakFDs, f)
				}
			}
		}
	}()
	for s := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				r, err := c.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: ids[s],
					Content: prompt(fmt.Sprintf("say answer %d of session %d", n, s))})
				if err != nil {
					t.Errorf("session %d, turn %d: %v", s, n, err)
					return
				}
				if r.StopReason == "end_turn" {
					acked[s] = append(acked[s], n)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if t.Failed() {
		return
	}
	total := 0
	for s, id := range ids {
		var doc struct {
			Entries []struct {
				Seq     int64 `json:"seq"`
				Kind    string
				Payload struct {
					Text string `json:"text"`
				} `json:"payload"`
			} `json:"entries"`
		}
		out := rpctest.Must(c.Client, c.SessionExport, schema.SessionExportParams{SessionID: id, Format: "json"})
		if err := json.Unmarshal([]byte(out.Content), &doc); err != nil {
			t.Fatalf("session %d: export: %v", s, err)
		}
		var asked, answered []string
		for _, e := range doc.Entries {
			switch e.Kind {
			case "user.message":
				asked = append(asked, e.Payload.Text)
			case "assistant.message":
				answered = append(answered, e.Payload.Text)
			}
		}
		want := 0
		for _, n := range acked[s] {
			q := fmt.Sprintf("say answer %d of session %d", n, s)
			a := strings.TrimPrefix(q, "say ")
			for want < len(asked) && asked[want] != q {
				want++
			}
			if want == len(asked) {
				t.Fatalf("session %d: acknowledged turn %d is missing or out of order in the record (%d user messages)", s, n, len(asked))
			}
			if c := strings.Count(strings.Join(answered, "\n")+"\n", a+"\n"); c != 1 {
				t.Fatalf("session %d: the answer of acknowledged turn %d is recorded %d times", s, n, c)
			}
		}
		total += len(acked[s])
	}
	if total < sessions {
		t.Fatalf("only %d turns acknowledged in %v", total, dur)
	}

	// Back near the start. Descriptors: those on anything but the
	// record's own files within 2 of the start; the record's files are
	// held by SQLite connection pools that keep what a load opened, up to
	// their bound (16 connections to the record and 5 to its search index,
	// each with the file, its log and its shared memory: 63). Memory:
	// within 64 MiB or half again the start once the runtime has given
	// back what the load used.
	const recordFDs = 63
	split := func(targets []string) (record, other int) {
		for _, l := range targets {
			if strings.HasPrefix(filepath.Base(l), "bridge.db") {
				record++
			} else {
				other++
			}
		}
		return record, other
	}
	_, other0 := split(before)
	var rss, fds, rec, other int
	for end := time.Now().Add(60 * time.Second); ; {
		rss, fds = procStat(t, pid)
		rec, other = split(fdTargets(t, pid))
		if (other <= other0+2 && rss <= max(rss0*3/2, rss0+64<<10)) || time.Now().After(end) {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("%d sessions, %v: %d turns acknowledged; RSS %d → peak %d → %d MiB; descriptors %d → peak %d → %d (%d on the record's files)",
		sessions, dur, total, rss0>>10, peakRSS>>10, rss>>10, fds0, peakFDs, fds, rec)
	if other > other0+2 || rec > recordFDs {
		t.Fatalf("descriptors: %d before the load, %d after it (%d on the record's files); new: %v", fds0, fds, rec, newTargets(before, fdTargets(t, pid)))
	}
	if rss > max(rss0*3/2, rss0+64<<10) {
		t.Fatalf("resident memory: %d KiB before the load, %d KiB a minute after it", rss0, rss)
	}
}

// fdTargets lists what a process's descriptors point at.
func fdTargets(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil {
			out = append(out, l)
		}
	}
	return out
}

// newTargets is what after holds beyond before (as multisets).
func newTargets(before, after []string) []string {
	n := map[string]int{}
	for _, b := range before {
		n[b]++
	}
	var out []string
	for _, a := range after {
		if n[a] > 0 {
			n[a]--
			continue
		}
		out = append(out, a)
	}
	return out
}
