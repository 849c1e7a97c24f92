package fake

import (
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
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
)

// header is the first line of a fake transcript.
type header struct {
	Type        string                  `json:"type"`
	ID          string                  `json:"id"`
	Cwd         string                  `json:"cwd,omitempty"`
	Model       string                  `json:"model,omitempty"`
	Effort      string                  `json:"effort,omitempty"`
	Preset      string                  `json:"preset,omitempty"`
	Title       string                  `json:"title,omitempty"`
	Archived    bool                    `json:"archived,omitempty"`
	CreatedAt   time.Time               `json:"createdAt"`
	UpdatedAt   time.Time               `json:"updatedAt"`
	Used        int64                   `json:"used,omitempty"`
	Prompts     int64                   `json:"prompts,omitempty"`
	Queue       []queued                `json:"queue,omitempty"`
	Goals       []GoalState             `json:"goals,omitempty"`
	Attachments map[string]core.Content `json:"attachments,omitempty"`
}

// queued is a directive waiting for a later prompt (next, after).
type queued struct {
	Due  int64  `json:"due"` // the value of Prompts when it runs
	Line string `json:"line"`
}

// GoalState is a goal the fake holds for a session.
type GoalState struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Rounds int    `json:"rounds,omitempty"`
	Status string `json:"status"` // active, paused, cleared
}

type entryLine struct {
	Type     string          `json:"type"`
	Kind     core.Kind       `json:"kind"`
	NativeID string          `json:"nativeId,omitempty"`
	Payload  json.RawMessage `json:"payload"`
}

// record is one stored native session.
type record struct {
	header
	Entries []core.NewEntry
	// lines that are fake transcript records ("session", "entry") and
	// lines that are not (kept as harness events).
	records, other int
}

func (r *record) encode() ([]byte, error) {
	var buf bytes.Buffer
	h := r.header
	h.Type = "session"
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(h); err != nil {
		return nil, fmt.Errorf("fake: encode session %s: %w", r.ID, err)
	}
	for _, e := range r.Entries {
		if err := enc.Encode(entryLine{Type: "entry", Kind: e.Kind, NativeID: e.NativeID, Payload: e.Payload}); err != nil {
			return nil, fmt.Errorf("fake: encode session %s: %w", r.ID, err)
		}
	}
	return buf.Bytes(), nil
}

// decode reads a transcript. name is used in errors and, without a header,
// as the session id.
func decode(rd io.Reader, name string, total int64, progress func(done, total int64)) (*record, error) {
	lines := inputfile.NewLines(rd, "fake transcript "+core.Quote(name), 0)
	r := &record{}
	for {
		line, err := lines.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := r.addLine(line, lines.Line(), name); perr != nil {
				return nil, perr
			}
		}
		if progress != nil {
			progress(lines.Done(), total)
		}
	}
	if r.ID == "" {
		r.ID = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return r, nil
}

func (r *record) addLine(line []byte, lineNo int, name string) error {
	bad := func(msg string, err error) error {
		return core.E(core.CodeInvalid, fmt.Sprintf("fake transcript %s: line %d: %s", name, lineNo, msg), err)
	}
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return bad("not a JSON object", err)
	}
	switch probe.Type {
	case "session":
		if r.ID != "" || len(r.Entries) > 0 {
			return bad("session header must come before every entry", nil)
		}
		if err := json.Unmarshal(line, &r.header); err != nil {
			return bad("malformed session header", err)
		}
		if r.ID == "" {
			return bad("session header has no id", nil)
		}
		return nil
	case "entry":
		r.records++
		var el entryLine
		if err := json.Unmarshal(line, &el); err != nil {
			return bad("malformed entry", err)
		}
		id := el.NativeID
		if id == "" {
			id = r.lineID(name, lineNo)
		}
		if !el.Kind.Known() {
			r.Entries = append(r.Entries, keepRaw("entry:"+string(el.Kind), line, id))
			return nil
		}
		e := core.NewEntry{Kind: el.Kind, Payload: el.Payload, NativeID: id}
		if err := e.Validate(); err != nil {
			return bad("invalid entry", err)
		}
		r.Entries = append(r.Entries, e)
		return nil
	}
	r.other++
	r.Entries = append(r.Entries, keepRaw(probe.Type, line, r.lineID(name, lineNo)))
	return nil
}

// lineID names an entry that has no native id by its session and line.
func (r *record) lineID(name string, lineNo int) string {
	id := r.ID
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return fmt.Sprintf("%s:line%d", id, lineNo)
}

// keepRaw keeps a line the fake has no mapping for as a harness.event.
func keepRaw(typ string, line []byte, nativeID string) core.NewEntry {
	if typ == "" {
		typ = "unknown"
	}
	return core.NewEntry{Kind: core.KindHarnessEvent, NativeID: nativeID,
		Payload: core.Payload(core.HarnessEventPayload{Type: typ, Raw: json.RawMessage(bytes.TrimSpace(line))})}
}

// validID reports whether id is safe as a file name.
func validID(id string) bool {
	if id == "" || len(id) > 200 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

func (h *Host) file(id string) string { return filepath.Join(h.opts.StateDir, id+".jsonl") }

// load reads a stored session; a missing one is core.NotFound.
func (h *Host) load(id string) (*record, error) {
	if !validID(id) {
		return nil, core.NotFound("fake session", id)
	}
	var data []byte
	if h.opts.StateDir == "" {
		b, ok := h.mem[id]
		if !ok {
			return nil, core.NotFound("fake session", id)
		}
		data = b
	} else {
		b, err := os.ReadFile(h.file(id))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, core.NotFound("fake session", id)
		}
		if err != nil {
			return nil, fmt.Errorf("fake: read session %s: %w", id, err)
		}
		data = b
	}
	return decode(bytes.NewReader(data), id+".jsonl", int64(len(data)), nil)
}

// save writes a stored session (atomically, on disk).
func (h *Host) save(r *record) error {
	data, err := r.encode()
	if err != nil {
		return err
	}
	if h.opts.StateDir == "" {
		h.mem[r.ID] = data
		return nil
	}
	if err := os.MkdirAll(h.opts.StateDir, 0o755); err != nil {
		return fmt.Errorf("fake: state dir: %w", err)
	}
	tmp, err := os.CreateTemp(h.opts.StateDir, "."+r.ID+".*.tmp")
	if err != nil {
		return fmt.Errorf("fake: save session %s: %w", r.ID, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("fake: save session %s: %w", r.ID, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("fake: save session %s: %w", r.ID, err)
	}
	if err := os.Rename(tmp.Name(), h.file(r.ID)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("fake: save session %s: %w", r.ID, err)
	}
	return nil
}

// update loads session id, applies fn and saves it, under the host's lock.
func (h *Host) update(id string, fn func(r *record) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, err := h.load(id)
	if err != nil {
		return err
	}
	if err := fn(r); err != nil {
		return err
	}
	r.UpdatedAt = h.now()
	return h.save(r)
}

// get loads session id under the host's lock.
func (h *Host) get(id string) (*record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.load(id)
}

// all loads every stored session, newest first. Files that cannot be read
// are left out, so one damaged file does not hide the others.
func (h *Host) all() ([]*record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	if h.opts.StateDir == "" {
		for id := range h.mem {
			ids = append(ids, id)
		}
	} else {
		des, err := os.ReadDir(h.opts.StateDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("fake: list state dir: %w", err)
		}
		for _, de := range des {
			n := de.Name()
			if !de.IsDir() && strings.HasSuffix(n, ".jsonl") && !strings.HasPrefix(n, ".") {
				ids = append(ids, strings.TrimSuffix(n, ".jsonl"))
			}
		}
	}
	var out []*record
	for _, id := range ids {
		if r, err := h.load(id); err == nil {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// ImportStream reads a fake transcript (see "Persistence and import" in the
// package doc) and hands its entries to sink in batches (core.Importer). It
// is how session/import is tested without a real harness; a file from
// StateDir imports as it is. Unlike the real harnesses' importers it reads
// the whole (small, test-sized) transcript first: the fake's transcript is
// also its own state file.
func (h *Host) ImportStream(ctx context.Context, path string, sink core.ImportSink, progress func(done, total int64)) (core.ImportedSession, error) {
	is, err := h.Import(ctx, path, progress)
	if err != nil {
		return core.ImportedSession{}, err
	}
	b := &core.ImportBatcher{Sink: sink, Head: is}
	b.Head.Entries = nil
	if err := b.Add(is.Entries...); err != nil {
		return core.ImportedSession{}, err
	}
	if err := b.Flush(); err != nil {
		return core.ImportedSession{}, err
	}
	return b.Head, nil
}

// Import reads a fake transcript into memory, whole.
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	if err := ctx.Err(); err != nil {
		return core.ImportedSession{}, fmt.Errorf("fake import: %w", err)
	}
	f, err := inputfile.Open(ctx, path, "fake transcript", 0)
	if err != nil {
		return core.ImportedSession{}, err
	}
	defer f.Close()
	total := f.Size()
	r, err := decode(f, path, total, progress)
	if err != nil {
		return core.ImportedSession{}, err
	}
	if r.header.Type == "" && (r.records == 0 || r.other > r.records) {
		return core.ImportedSession{}, core.Errorf(core.CodeInvalid, "fake import: %s holds no session (%d of %d lines are fake transcript records)",
			core.Quote(path), r.records, r.records+r.other)
	}
	return core.ImportedSession{NativeID: r.ID, Cwd: r.Cwd, Model: r.Model, Title: r.Title, Entries: r.Entries}, nil
}
