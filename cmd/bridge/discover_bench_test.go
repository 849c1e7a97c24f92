package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// claudeTranscript writes a Claude Code transcript of session sid with
// about size bytes: alternating user and assistant lines, each chained to
// the previous by parentUuid.
func claudeTranscript(path, sid string, size int) error {
	var b strings.Builder
	parent := ""
	for i := 0; b.Len() < size; i++ {
		uuid := fmt.Sprintf("%s-%08d", sid[:23], i)
		pu := "null"
		if parent != "" {
			pu = `"` + parent + `"`
		}
		text := fmt.Sprintf("message %d of session %s: please look at internal/server/listen.go and change the port, then run the tests and report what failed", i, sid)
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":"%s","timestamp":"2026-11-30T03:21:09.540Z","cwd":"/home/user/project","sessionId":"%s","version":"2.1.332"}`+"\n",
				pu, text, uuid, sid)
		} else {
			fmt.Fprintf(&b, `{"parentUuid":%s,"isSidechain":false,"message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{"input_tokens":2500,"output_tokens":70}},"type":"assistant","uuid":"%s","timestamp":"2026-11-30T03:21:09.730Z","cwd":"/home/user/project","sessionId":"%s","version":"2.1.332"}`+"\n",
				pu, i, "Done: "+text, uuid, sid)
		}
		parent = uuid
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// BenchmarkDiscover measures `bridge import --discover` over a folder of
// Claude Code transcripts (BRIDGE_BENCH_DISCOVER_MB megabytes, default
// 1024, in files of BRIDGE_BENCH_DISCOVER_FILE_KB kilobytes, default 8192)
// against `cat` of the same files in the same run, both in MB/s. Each
// iteration discovers into a fresh data directory.
func BenchmarkDiscover(b *testing.B) {
	mb := 1024
	if v := os.Getenv("BRIDGE_BENCH_DISCOVER_MB"); v != "" {
		mb, _ = strconv.Atoi(v)
	}
	fileKB := int(benchMB("BRIDGE_BENCH_DISCOVER_FILE_KB", 8<<10))
	root := b.TempDir()
	claude := filepath.Join(root, "claude")
	var files []string
	total := int64(0)
	for i := 0; total < int64(mb)<<20; i++ {
		sid := fmt.Sprintf("%08d-5436-4b34-8ea1-4bd239b73459", i)
		p := filepath.Join(claude, "projects", "-home-user-project", sid+".jsonl")
		if err := claudeTranscript(p, sid, fileKB<<10); err != nil {
			b.Fatal(err)
		}
		st, _ := os.Stat(p)
		total += st.Size()
		files = append(files, p)
	}
	env := append(os.Environ(), "HOME="+root, "CLAUDE_CONFIG_DIR="+claude, "CODEX_HOME="+filepath.Join(root, "none"),
		"DSH_HOME="+filepath.Join(root, "none"))
	var catT, discT time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		cat := exec.Command("cat", files...)
		cat.Stdout = nil // discarded
		if err := cat.Run(); err != nil {
			b.Fatal(err)
		}
		catT += time.Since(t0)
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
		t0 = time.Now()
		cmd := exec.Command(binPath, "--data-dir", dir, "import", "--discover", "--harness", "claude-code", "--json")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		discT += time.Since(t0)
	}
	mbs := float64(total) / (1 << 20) * float64(b.N)
	b.ReportMetric(mbs/catT.Seconds(), "cat-MB/s")
	b.ReportMetric(mbs/discT.Seconds(), "discover-MB/s")
	b.ReportMetric(catT.Seconds()/discT.Seconds(), "discover/cat")
	b.ReportMetric(float64(total)/(1<<20), "MB")
	b.ReportMetric(float64(len(files)), "files")
}
