package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
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
	// Timestamp is when Claude Code wrote the line (RFC 3339); the
	// entries mapped from it are recorded at that time.
	Timestamp string `json:"timestamp"`
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

// importer maps transcript lines and hands their entries to a sink in
// batches (core.ImportBatcher).
type importer struct {
	b core.ImportBatcher
	// fallbackID is the session id used when no line has named one by the
	// time the first batch goes out (the transcript's file name).
	fallbackID string
	lastComp   int  // index in b.Pending() of the last context.compacted, or -1
	folded     bool // whether a summary was folded into it
	evidence   *evidence
	response   *responseUsage // the usage of the response being read (usage.go)
}

// add maps one transcript line and tells whether it is a Claude Code
// record: a JSON object whose "type" is one Claude Code writes, or that
// carries a Claude Code session id or uuid.
func (im *importer) add(raw []byte) (record bool, err error) {
	var t transcriptLine
	if raw[0] != '{' || unmarshal(raw, &t) != nil {
		return false, im.emit(*harnessEvent("malformed", lineID(raw), raw))
	}
	im.b.Stamp(core.ParseTime(t.Timestamp))
	record = t.Type != "" && (recordTypes[t.Type] || bookkeeping[t.Type] || t.SessionIDC != "" || t.SessionID != "" || t.UUID != "")
	head := &im.b.Head
	if sid := firstNonEmpty(t.SessionIDC, t.SessionID); sid != "" && head.NativeID == "" {
		head.NativeID = sid
	}
	if t.Cwd != "" && head.Cwd == "" {
		head.Cwd = t.Cwd
	}
	if t.Type == "custom-title" && t.CustomTitle != "" {
		head.Title = t.CustomTitle
	}
	if bookkeeping[t.Type] {
		return record, nil
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
		return record, im.emit(c.Entry())
	case t.Type == "system" && t.Subtype == "init":
		if t.Model != "" && head.Model == "" {
			head.Model = t.Model
		}
		return record, nil
	case t.Type == "user" && t.Message != nil:
		blocks := contentBlocks(t.Message.Content, userPlain)
		text := blocksText(blocks)
		summary := t.IsCompactSummary || strings.HasPrefix(text, "This session is being continued from a previous conversation")
		if summary && im.lastComp >= 0 && im.foldSummary(text) {
			return record, nil
		}
		evs = userBlockEvents(blocks, id, t.IsReplay || t.IsMeta, summary)
	case t.Type == "assistant" && t.Message != nil:
		if t.Message.Model != "" && head.Model == "" && t.Message.Model != "<synthetic>" {
			head.Model = t.Message.Model
		}
		evs = assistantEvents(t.Message, id, t.ParentToolUseID, t.Error)
		if t.SessionIDC != "" { // on disk: no result lines carry the turn's usage
			for _, e := range im.noteResponse(t.Message, raw) {
				if err := im.emit(e); err != nil {
					return record, err
				}
			}
		}
	default:
		evs = mapStream(&t.streamMsg, raw)
	}
	if im.evidence == nil {
		im.evidence = newEvidence()
	}
	for _, ev := range im.evidence.add(evs) {
		if ev.Entry != nil {
			if err := im.emit(*ev.Entry); err != nil {
				return record, err
			}
		}
	}
	return record, nil
}

// emit queues one entry and hands out a batch once core.ImportBatch are
// waiting. The last context.compacted stays queued while its summary may
// still follow (a batch's worth of entries), so that it can be folded in;
// the first batch waits for a line naming the session, up to
// core.MaxHold entries.
func (im *importer) emit(e core.NewEntry) error {
	if err := im.b.Err(); err != nil {
		return err
	}
	im.b.Queue(e)
	if e.Kind == core.KindContextCompacted {
		im.lastComp, im.folded = len(im.b.Pending())-1, false
	}
	if len(im.b.Pending()) < core.ImportBatch {
		return nil
	}
	return im.flush(false)
}

// flush hands out what is queued (all of it at the end).
func (im *importer) flush(end bool) error {
	n := len(im.b.Pending())
	if !end && im.b.Ready != nil && !im.b.Ready() && n < core.MaxHold {
		return nil
	}
	if im.b.Head.NativeID == "" {
		im.b.Head.NativeID = im.fallbackID
	}
	if end {
		return im.b.Flush()
	}
	keep := 0
	if im.lastComp >= 0 && !im.folded && n-im.lastComp < core.ImportBatch {
		keep = n - im.lastComp
	}
	if err := im.b.FlushUpTo(n - keep); err != nil {
		return err
	}
	if keep > 0 {
		im.lastComp = 0
	} else {
		im.lastComp = -1
	}
	return nil
}

// foldSummary puts a compaction summary into the last context.compacted
// entry, once.
func (im *importer) foldSummary(text string) bool {
	if im.folded {
		return false
	}
	e := &im.b.Pending()[im.lastComp]
	var c core.Compacted
	if json.Unmarshal(e.Payload, &c) != nil {
		return false
	}
	c.Summary = text
	e.Payload = core.Payload(c)
	im.folded = true
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

// readTranscript reads a transcript from r, handing its entries to sink in
// batches and calling progress with bytes read so far and total. A line
// longer than inputfile.MaxLineBytes fails the read. Input in which no
// line is a Claude Code record (a JSON object with a "type"), or fewer
// lines are records than not, is refused: it is not a transcript (what
// sink was given must then be discarded). fallbackID is the session id
// when no line names one.
func readTranscript(ctx context.Context, r io.Reader, total int64, fallbackID string, sink core.ImportSink, progress func(done, total int64)) (core.ImportedSession, error) {
	im := &importer{lastComp: -1, fallbackID: fallbackID, b: core.ImportBatcher{Sink: sink}}
	im.b.Ready = func() bool { return im.b.Head.NativeID != "" }
	lines := inputfile.NewLines(r, "claude-code transcript", 0)
	var records, other int
	for {
		line, err := lines.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if c := core.ErrorCode(err); c == core.CodeInvalid || c == core.CodeCancelled {
				return core.ImportedSession{}, err
			}
			return core.ImportedSession{}, core.E(core.CodeHarness, "claude-code: reading transcript", err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			record, err := im.add(t)
			if err != nil {
				return core.ImportedSession{}, err
			}
			if record {
				records++
			} else {
				other++
			}
		}
		if n := lines.Line(); n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return core.ImportedSession{}, core.E(core.CodeCancelled, "claude-code: import cancelled", errors.Join(core.ErrCancelled, err))
			}
			if progress != nil {
				progress(lines.Done(), total)
			}
		}
	}
	if records == 0 || other > records {
		return core.ImportedSession{}, core.Errorf(core.CodeInvalid,
			"not a Claude Code transcript: %d of %d non-empty lines are Claude Code records",
			records, records+other)
	}
	for _, e := range im.takeResponse() {
		if err := im.emit(e); err != nil {
			return core.ImportedSession{}, err
		}
	}
	if err := im.flush(true); err != nil {
		return core.ImportedSession{}, err
	}
	if progress != nil {
		progress(lines.Done(), total)
	}
	return im.b.Head, nil
}

// recordTypes are the conversation line types of transcripts and
// stream-json output (bookkeeping lists the others).
var recordTypes = map[string]bool{"user": true, "assistant": true, "system": true, "result": true,
	"control_cancel_request": true}

// ImportStream reads a Claude Code transcript (on-disk JSONL or saved
// stream-json output) into entries, handed to sink in batches
// (core.Importer). Every entry carries a NativeID derived from the line's
// uuid (plus the block index), or a hash of a line that has none, so
// importing the same file twice adds nothing. The session id is the first
// one a line names, else the file's name. Only a regular file within
// inputfile.DefaultMaxBytes is read.
func (h *Host) ImportStream(ctx context.Context, path string, sink core.ImportSink, progress func(done, total int64)) (core.ImportedSession, error) {
	f, err := inputfile.Open(ctx, path, "claude-code transcript", 0)
	if err != nil {
		return core.ImportedSession{}, err
	}
	defer f.Close()
	out, err := readTranscript(ctx, f, f.Size(), strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), sink, progress)
	if err != nil {
		return out, fmt.Errorf("%s: %w", core.Quote(filepath.Base(path)), err)
	}
	return out, nil
}

// Import reads a whole transcript into memory (core.CollectImport): for
// reading one session's history and for tests; imports stream.
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	return core.CollectImport(ctx, h, path, progress)
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
	f, err := inputfile.Open(context.Background(), path, "claude-code transcript", 0)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	lines := inputfile.NewLines(f, "claude-code transcript", 0)
	var first string
	for {
		line, err := lines.Next()
		if err != nil {
			break
		}
		var t transcriptLine
		if json.Unmarshal(line, &t) != nil {
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
