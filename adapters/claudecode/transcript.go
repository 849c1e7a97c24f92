package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// transcriptLine is one line of a transcript: the on-disk camelCase format
// (~/.claude/projects/<dir>/<id>.jsonl) or the stream-json snake_case
// output. Both spellings of the fields the importer needs are read.
type transcriptLine struct {
	streamMsg
	SessionIDC       string       `json:"sessionId"`
	CompactMetaC     *compactMeta `json:"compactMetadata"`
	IsCompactSummary bool         `json:"isCompactSummary"`
	IsMeta           bool         `json:"isMeta"`
	CustomTitle      string       `json:"customTitle"`
}

// bookkeeping lists on-disk line types that are Claude Code's own state,
// not conversation: they are skipped on import.
var bookkeeping = map[string]bool{
	"queue-operation": true, "attachment": true, "api-request": true, "api-request-shape": true,
	"api-request-blob": true, "last-prompt": true, "atis-latch": true, "cost-state": true, "mode": true,
	"file-history-snapshot": true, "permission-mode": true, "agent-name": true, "custom-title": true,
	"summary": true, "progress": true, "content-replacement": true, "pr-link": true,
	"control_response": true, "control_request": true, "keep_alive": true, "stream_event": true,
}

// importer accumulates entries from transcript lines.
type importer struct {
	out       core.ImportedSession
	lastComp  int // index in out.Entries of the last context.compacted, or -1
	summaryAt int // index of the entry the last compact summary was folded into
	evidence  *evidence
}

// add maps one transcript line.
func (im *importer) add(raw []byte) {
	var t transcriptLine
	if err := json.Unmarshal(raw, &t); err != nil {
		e := harnessEvent("malformed", lineID(raw), raw)
		im.out.Entries = append(im.out.Entries, *e)
		return
	}
	if sid := firstNonEmpty(t.SessionIDC, t.SessionID); sid != "" && im.out.NativeID == "" {
		im.out.NativeID = sid
	}
	if t.Cwd != "" && im.out.Cwd == "" {
		im.out.Cwd = t.Cwd
	}
	if t.Type == "custom-title" && t.CustomTitle != "" {
		im.out.Title = t.CustomTitle
	}
	if bookkeeping[t.Type] {
		return
	}
	id := msgID(t.UUID, raw)
	var evs []core.Event
	switch {
	case t.Type == "system" && t.Subtype == "compact_boundary":
		meta := t.CompactMetadata
		if meta == nil {
			meta = t.CompactMetaC
		}
		c := compacted(id, meta, raw)
		im.lastComp = len(im.out.Entries)
		e := c.Entry()
		evs = []core.Event{{Entry: &e}}
	case t.Type == "system" && t.Subtype == "init":
		if t.Model != "" && im.out.Model == "" {
			im.out.Model = t.Model
		}
		return
	case t.Type == "user" && t.Message != nil:
		summary := t.IsCompactSummary || strings.HasPrefix(flattenText(t.Message.Content), "This session is being continued from a previous conversation")
		if summary && im.lastComp >= 0 && im.foldSummary(flattenText(t.Message.Content)) {
			return
		}
		evs = userEvents(t.Message, id, t.IsReplay || t.IsMeta, summary)
	case t.Type == "assistant" && t.Message != nil:
		if t.Message.Model != "" && im.out.Model == "" && t.Message.Model != "<synthetic>" {
			im.out.Model = t.Message.Model
		}
		evs = assistantEvents(t.Message, id, t.ParentToolUseID, t.Error)
	default:
		evs = mapStream(&t.streamMsg, raw)
	}
	if im.evidence == nil {
		im.evidence = newEvidence()
	}
	for _, ev := range im.evidence.add(evs) {
		if ev.Entry != nil {
			im.out.Entries = append(im.out.Entries, *ev.Entry)
		}
	}
}

// foldSummary puts a compaction summary into the last context.compacted
// entry, once.
func (im *importer) foldSummary(text string) bool {
	if im.summaryAt == im.lastComp {
		return false
	}
	e := &im.out.Entries[im.lastComp]
	var c core.Compacted
	if json.Unmarshal(e.Payload, &c) != nil {
		return false
	}
	c.Summary = text
	e.Payload = core.Payload(c)
	im.summaryAt = im.lastComp
	return true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// readTranscript reads a transcript from r, calling progress with bytes
// read so far and total.
func readTranscript(ctx context.Context, r io.Reader, total int64, progress func(done, total int64)) (core.ImportedSession, error) {
	im := &importer{lastComp: -1, summaryAt: -1}
	br := bufio.NewReaderSize(r, 1<<20)
	var done int64
	var n int
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		done += int64(len(line))
		if t := bytes.TrimSpace(line); len(t) > 0 {
			im.add(t)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return core.ImportedSession{}, core.E(core.CodeHarness, "claude-code: reading transcript", err)
		}
		n++
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return core.ImportedSession{}, core.E(core.CodeCancelled, "claude-code: import cancelled", errors.Join(core.ErrCancelled, err))
			}
			if progress != nil {
				progress(done, total)
			}
		}
	}
	if progress != nil {
		progress(done, total)
	}
	return im.out, nil
}

// Import reads a Claude Code transcript (on-disk JSONL or saved stream-json
// output) into entries. Every entry carries a NativeID derived from the
// line's uuid (plus the block index), or a hash of a line that has none, so
// importing the same file twice adds nothing.
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return core.ImportedSession{}, core.E(core.CodeNotFound, fmt.Sprintf("claude-code: transcript %q not found", path), err)
		}
		return core.ImportedSession{}, core.E(core.CodeInvalid, fmt.Sprintf("claude-code: cannot open transcript %q", path), err)
	}
	defer f.Close()
	var total int64
	if st, err := f.Stat(); err == nil {
		total = st.Size()
	}
	out, err := readTranscript(ctx, f, total, progress)
	if err != nil {
		return out, err
	}
	if out.NativeID == "" {
		out.NativeID = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return out, nil
}

// projectDirName is the folder Claude Code keeps a cwd's transcripts in:
// every character other than an ASCII letter or digit becomes '-'.
func projectDirName(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// transcriptFiles lists <id>.jsonl files under the projects folder, for one
// cwd or all of them.
func (h *Host) transcriptFiles(cwd string) ([]string, error) {
	root := filepath.Join(h.configDir(), "projects")
	pattern := filepath.Join(root, "*", "*.jsonl")
	if cwd != "" {
		pattern = filepath.Join(root, projectDirName(cwd), "*.jsonl")
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, core.E(core.CodeInternal, "claude-code: listing transcripts", err)
	}
	return files, nil
}

// ListSessions lists the sessions stored as transcripts, newest first.
func (h *Host) ListSessions(ctx context.Context, cwd string) ([]core.HostSession, error) {
	files, err := h.transcriptFiles(cwd)
	if err != nil {
		return nil, err
	}
	var out []core.HostSession
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			continue
		}
		hs := core.HostSession{NativeID: strings.TrimSuffix(filepath.Base(f), ".jsonl"), UpdatedAt: st.ModTime()}
		hs.Title, hs.Cwd = transcriptHeader(f)
		out = append(out, hs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

// transcriptHeader reads a transcript's title (its last custom title, else
// its first prompt, shortened) and cwd.
func transcriptHeader(path string) (title, cwd string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var first string
	for sc.Scan() {
		var t transcriptLine
		if json.Unmarshal(sc.Bytes(), &t) != nil {
			continue
		}
		if cwd == "" && t.Cwd != "" {
			cwd = t.Cwd
		}
		if t.Type == "custom-title" && t.CustomTitle != "" {
			title = t.CustomTitle
		}
		if first == "" && t.Type == "user" && t.Message != nil && !t.IsMeta && !t.IsCompactSummary {
			if s := flattenText(t.Message.Content); s != "" && !isLocalCommandText(s) {
				first = s
			}
		}
	}
	if title == "" {
		title = first
		if r := []rune(title); len(r) > 80 {
			title = string(r[:80]) + "…"
		}
	}
	return title, cwd
}

// History reads a stored session's transcript into entries.
func (h *Host) History(ctx context.Context, nativeID string) ([]core.NewEntry, error) {
	if nativeID == "" || strings.ContainsAny(nativeID, `/\`) {
		return nil, core.Errorf(core.CodeInvalid, "claude-code: bad session id %q", nativeID)
	}
	files, err := filepath.Glob(filepath.Join(h.configDir(), "projects", "*", nativeID+".jsonl"))
	if err != nil || len(files) == 0 {
		return nil, core.NotFound("claude-code session", nativeID)
	}
	is, err := h.Import(ctx, files[0], nil)
	if err != nil {
		return nil, err
	}
	return is.Entries, nil
}

// Workspaces lists the working directories Claude Code has transcripts for.
func (h *Host) Workspaces(ctx context.Context) ([]core.Workspace, error) {
	dirs, err := filepath.Glob(filepath.Join(h.configDir(), "projects", "*"))
	if err != nil {
		return nil, core.E(core.CodeInternal, "claude-code: listing projects", err)
	}
	var out []core.Workspace
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.jsonl"))
		path := ""
		for _, f := range files {
			if _, cwd := transcriptHeader(f); cwd != "" {
				path = cwd
				break
			}
		}
		if path == "" {
			continue
		}
		out = append(out, core.Workspace{Path: path, Name: filepath.Base(path)})
	}
	return out, nil
}
