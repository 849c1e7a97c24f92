package dsh_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
)

const (
	webSession = "session-c1cefee7-f814-4f92-873a-6fd1d6a10687"
	webCompact = "bbb2e3bd-0fa9-4c27-a154-9aed7bb7cd84"
)

func testdata(name string) string { return filepath.Join("..", "..", "testdata", "dsh", name) }

func compacted(t *testing.T, entries []core.NewEntry) []core.Compacted {
	t.Helper()
	var out []core.Compacted
	for _, e := range entries {
		if e.Kind != core.KindContextCompacted {
			continue
		}
		var c core.Compacted
		if err := json.Unmarshal(e.Payload, &c); err != nil {
			t.Fatalf("context.compacted payload: %v", err)
		}
		if e.NativeID != c.NativeID {
			t.Errorf("entry NativeID %q != payload nativeId %q", e.NativeID, c.NativeID)
		}
		out = append(out, c)
	}
	return out
}

func texts(t *testing.T, entries []core.NewEntry, kind core.Kind) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		if e.Kind == kind {
			var p struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			out = append(out, p.Text)
		}
	}
	return out
}

func checkEntries(t *testing.T, entries []core.NewEntry) {
	t.Helper()
	seen := map[string]bool{}
	for i, e := range entries {
		if err := e.Validate(); err != nil {
			t.Errorf("entry %d (%s): %v", i, e.Kind, err)
		}
		if e.NativeID == "" || seen[e.NativeID] {
			t.Errorf("entry %d (%s): native id %q empty or repeated", i, e.Kind, e.NativeID)
		}
		seen[e.NativeID] = true
	}
}

// TestRecordedWebSessionLog reads the durable log of the recorded web run
// (four phases: turns, a goal, a restart, /compact through the commands
// endpoint, goal clear/create/pause).
func TestRecordedWebSessionLog(t *testing.T) {
	log, err := dsh.ReadLog(testdata("web-rpc.session.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if log.Header.ID != webSession || log.Header.AgentPreset != "standard" || len(log.Events) != 89 {
		t.Fatalf("header %+v, %d events", log.Header, len(log.Events))
	}
	m := dsh.MapLog(log)
	checkEntries(t, m.Entries)
	cs := compacted(t, m.Entries)
	if len(cs) != 1 {
		t.Fatalf("%d context.compacted entries, want exactly 1", len(cs))
	}
	c := cs[0]
	if c.Harness != "dsh" || c.Trigger != core.TriggerManual || c.PreTokens == nil || *c.PreTokens != 1933 ||
		c.ShadowedTokens == nil || *c.ShadowedTokens != 444 ||
		c.NativeID != webSession+"#compaction:"+webCompact || !strings.HasPrefix(c.Summary, "SUMMARY-6: The user asked") {
		t.Errorf("compacted = %+v (preTokens %v)", c, c.PreTokens)
	}
	var raw struct {
		Start, Summary, End json.RawMessage
		Replaces            []string
		Replacement         struct {
			Seq int64 `json:"seq"`
		}
	}
	if err := json.Unmarshal(c.Raw, &raw); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range []string{"7", "8", "25", "33", "49", "57", "70", "79"} {
		want = append(want, webSession+"#"+s)
	}
	if !reflect.DeepEqual(raw.Replaces, want) || raw.Replacement.Seq != 98 || raw.Start == nil || raw.End == nil ||
		!bytes.Contains(raw.Summary, []byte(`"shadowedTokenCount":444`)) {
		t.Errorf("raw: replaces %v (want %v), replacement seq %d, summary %s", raw.Replaces, want, raw.Replacement.Seq, raw.Summary)
	}
	// The replace op leaves the checkpoint message and the retained tail.
	if !reflect.DeepEqual(m.Surface, []int64{98, 91}) {
		t.Errorf("surface after the compaction = %v, want [98 91]", m.Surface)
	}
	users := texts(t, m.Entries, core.KindUserMessage)
	if len(users) != 4 || users[0] != "Say hello" || users[1] != "/compact" || !strings.HasPrefix(users[2], "<goal_round>") || users[3] != "Say hello after restart" {
		t.Errorf("user messages = %q", users)
	}
	for _, u := range users {
		if strings.Contains(u, "automatically generated checkpoint") {
			t.Errorf("the compaction's replacement message was recorded as a user message")
		}
	}
	if got := texts(t, m.Entries, core.KindAssistantMessage); len(got) != 4 || !strings.HasPrefix(got[3], "FAKE-REPLY-5") {
		t.Errorf("assistant messages = %q", got)
	}
	goals := 0
	for _, e := range m.Entries {
		if e.Kind == core.KindHarnessEvent && bytes.Contains(e.Payload, []byte(`"type":"goal/change"`)) {
			goals++
		}
	}
	if goals != 5 || m.Title != "Fake title 2" || m.Model != "deepseek-official/deepseek-v4-flash" || m.StaleBrackets != 0 {
		t.Errorf("goal changes %d, title %q, model %q, stale %d", goals, m.Title, m.Model, m.StaleBrackets)
	}
}

// TestHeadlessSlashCompactIsPlainText: the headless runner sends "/compact"
// to the model as text, so its log has no compaction bracket and no
// context.compacted may be invented.
func TestHeadlessSlashCompactIsPlainText(t *testing.T) {
	for name, user := range map[string]string{"headless-slash-compact.session.jsonl": "/compact", "headless-turn.session.jsonl": "Say hello"} {
		log, err := dsh.ReadLog(testdata(name), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := dsh.MapLog(log)
		checkEntries(t, m.Entries)
		if n := len(compacted(t, m.Entries)); n != 0 {
			t.Errorf("%s: %d context.compacted entries, want 0", name, n)
		}
		if u := texts(t, m.Entries, core.KindUserMessage); len(u) != 1 || u[0] != user {
			t.Errorf("%s: user messages %q", name, u)
		}
		if a := texts(t, m.Entries, core.KindAssistantMessage); len(a) != 1 || !strings.HasPrefix(a[0], "FAKE-REPLY-") {
			t.Errorf("%s: assistant messages %q", name, a)
		}
	}
}

// lines returns the recorded web log's lines.
func lines(t *testing.T) [][]byte {
	t.Helper()
	b, err := os.ReadFile(testdata("web-rpc.session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimRight(b, "\n"), []byte("\n"))
}

// writeFrames writes data as one zstd frame per chunk, appended, the way
// DSH flushes session.jsonl.zstd; it returns each frame's byte offset.
func writeFrames(t *testing.T, path string, chunks [][]byte) []int {
	t.Helper()
	var file bytes.Buffer
	var offsets []int
	for _, c := range chunks {
		offsets = append(offsets, file.Len())
		enc, err := zstd.NewWriter(&file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enc.Write(c); err != nil {
			t.Fatal(err)
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return offsets
}

// frameChunks cuts the recorded log into 6 flushes, one of them cutting a
// line in two across frames.
func frameChunks(t *testing.T) [][]byte {
	ls := lines(t)
	cuts := []int{1, 12, 30, 52, 75, len(ls)}
	var chunks [][]byte
	prev := 0
	for _, c := range cuts {
		chunks = append(chunks, bytes.Join(ls[prev:c], nil))
		prev = c
	}
	// Split frame 3's last line across frames 3 and 4.
	last := chunks[2]
	cut := len(last) - 40
	chunks[3] = append(append([]byte{}, last[cut:]...), chunks[3]...)
	chunks[2] = last[:cut]
	return chunks
}

// TestMultiFrameZstdLog imports a session.jsonl.zstd made of six appended
// frames: every frame is read, and the result equals the plain log's.
func TestMultiFrameZstdLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl.zstd")
	writeFrames(t, path, frameChunks(t))
	var calls int
	var lastDone, lastTotal int64
	log, err := dsh.ReadLog(path, func(done, total int64) { calls, lastDone, lastTotal = calls+1, done, total })
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dsh.ReadLog(testdata("web-rpc.session.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if log.Frames != 6 || len(log.Events) != len(plain.Events) || len(log.Unreadable) != 0 {
		t.Fatalf("read %d frames, %d events (want 6, %d), unreadable %v", log.Frames, len(log.Events), len(plain.Events), log.Unreadable)
	}
	if calls != 6 || lastDone != lastTotal {
		t.Errorf("progress called %d times, last %d/%d", calls, lastDone, lastTotal)
	}
	h := dsh.New(dsh.Config{})
	first, err := h.Import(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := dsh.MapLog(plain).Entries
	if !reflect.DeepEqual(first.Entries, want) {
		t.Errorf("zstd import differs from the plain log's entries (%d vs %d)", len(first.Entries), len(want))
	}
	if first.NativeID != webSession || first.Cwd != "$SCRATCH/run2/ws" || first.Title != "Fake title 2" {
		t.Errorf("imported session %q cwd %q title %q", first.NativeID, first.Cwd, first.Title)
	}
	if len(compacted(t, first.Entries)) != 1 {
		t.Errorf("want exactly one context.compacted from the zstd log")
	}
	again, err := h.Import(context.Background(), path, nil)
	if err != nil || !reflect.DeepEqual(again.Entries, first.Entries) {
		t.Errorf("a second import gives different entries (err %v): native ids would not deduplicate", err)
	}
}

// TestCorruptZstdFrame: a truncated last frame and a damaged middle frame
// give a corrupt error naming the frame's offset, keeping every event of
// the frames before it.
func TestCorruptZstdFrame(t *testing.T) {
	dir := t.TempDir()
	chunks := frameChunks(t)
	good := filepath.Join(dir, "good.zstd")
	offsets := writeFrames(t, good, chunks)
	data, _ := os.ReadFile(good)
	// Events in frames 1..3 (frame 3's cut line completes in frame 4).
	before, err := dsh.ReadLog(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		data  []byte
		frame int // 0-based index of the bad frame
	}{
		"truncated": {data[:len(data)-25], 5},
		"damaged": {func() []byte {
			b := append([]byte{}, data...)
			for i := offsets[3] + 20; i < offsets[3]+60; i++ {
				b[i] ^= 0x5a
			}
			return b
		}(), 3},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".zstd")
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			log, err := dsh.ReadLog(path, nil)
			if core.ErrorCode(err) != core.CodeCorrupt {
				t.Fatalf("err = %v, want a corrupt error", err)
			}
			var fe *dsh.FrameError
			if !errors.As(err, &fe) || fe.Offset != offsets[c.frame] || fe.Path != path || !strings.Contains(err.Error(), "byte offset "+itoa(offsets[c.frame])) {
				t.Errorf("error %q / frame %+v does not name frame offset %d", err, fe, offsets[c.frame])
			}
			// Every whole line of the good frames is kept.
			var want int
			var n int
			for _, ch := range chunks[:c.frame] {
				n += bytes.Count(ch, []byte("\n"))
			}
			want = n - 1 // minus the header line
			if log == nil || len(log.Events) != want {
				t.Fatalf("kept %d events, want %d", len(log.Events), want)
			}
			for i := range log.Events {
				if !reflect.DeepEqual(log.Events[i], before.Events[i]) {
					t.Fatalf("event %d differs from the good log", i)
				}
			}
			is, err := dsh.New(dsh.Config{}).Import(context.Background(), path, nil)
			if err == nil || len(is.Entries) == 0 {
				t.Errorf("Import of the corrupt log: %d entries, err %v; want the entries read and the error", len(is.Entries), err)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestZstdLogOverTheLimit: a frame that declares more content than the
// input limit (1 GiB) is refused as invalid input naming the limit, before
// anything is decompressed, after the frames before it were read.
func TestZstdLogOverTheLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.zstd")
	writeFrames(t, path, frameChunks(t)[:1])
	// A frame declaring 1 GiB + 1 byte of content (8-byte content size,
	// single segment), holding one RLE block of 4 bytes.
	big := []byte{0x28, 0xB5, 0x2F, 0xFD, 0xE0}
	big = binary.LittleEndian.AppendUint64(big, uint64(inputfile.DefaultMaxBytes)+1)
	big = append(big, 0x23, 0x00, 0x00, 'x') // last block, RLE, size 4
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(big); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = dsh.ReadLog(path, nil)
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "more than the limit of 1073741824 bytes") {
		t.Fatalf("err = %v, want an invalid-input error naming the limit", err)
	}
}
