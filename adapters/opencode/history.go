package opencode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core/jsonstream"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
)

// storedMessage is one element of GET /session/{id}/message and of the
// "messages" array of `opencode export`.
type storedMessage struct {
	Info  json.RawMessage   `json:"info"`
	Parts []json.RawMessage `json:"parts"`
}

// messagesEntries maps a session's stored messages to entries, in order
// (messageMapper), each NativeID once.
func messagesEntries(msgs []storedMessage) []core.NewEntry {
	var out []core.NewEntry
	seen := map[string]bool{}
	mm := newMessageMapper(func(e core.NewEntry) {
		if seen[e.NativeID] {
			return
		}
		seen[e.NativeID] = true
		out = append(out, e)
	})
	for _, sm := range msgs {
		mm.message(sm)
	}
	return out
}

// messageMapper maps a session's stored messages to entries one message at
// a time. User text becomes user.message, assistant text
// assistant.message, tool parts tool.started/tool.completed, edits
// artifact.created, and a compaction part with its summary message one
// context.compacted. Every entry carries the part (or message) id as its
// NativeID, the same ids the live event mapping uses, so reading a session
// twice adds nothing (the record skips a NativeID it has).
type messageMapper struct {
	add         func(core.NewEntry)
	compactions map[string]*part // user message id -> its compaction part
	i           int
}

func newMessageMapper(add func(core.NewEntry)) *messageMapper {
	return &messageMapper{add: add, compactions: map[string]*part{}}
}

// message maps one stored message.
func (mm *messageMapper) message(sm storedMessage) {
	i := mm.i
	mm.i++
	// Entries are recorded at OpenCode's own times: a part's start, else
	// its message's creation (a part without either takes the one before).
	var cur time.Time
	at := func(ms int64) {
		if t := msTime(ms); !t.IsZero() {
			cur = t
		}
	}
	add := func(es ...core.NewEntry) {
		for _, e := range es {
			if e.At.IsZero() {
				e.At = cur
			}
			mm.add(e)
		}
	}
	compactions := mm.compactions
	{
		var info messageInfo
		if err := json.Unmarshal(sm.Info, &info); err != nil || info.ID == "" {
			add(harnessEvent(fmt.Sprintf("message#%d", i), "message.unreadable", sm.Info))
			return
		}
		at(info.Time.Created)
		msgAt := cur
		partAt := func(p part) {
			cur = msgAt
			if p.Time != nil {
				at(p.Time.Start)
			}
		}
		parts := make([]part, 0, len(sm.Parts))
		for j, raw := range sm.Parts {
			p, err := decodePart(raw)
			if err != nil || p.ID == "" {
				add(harnessEvent(fmt.Sprintf("%s#%d", info.ID, j), "part.unreadable", raw))
				continue
			}
			if p.MessageID == "" {
				p.MessageID = info.ID
			}
			parts = append(parts, p)
		}
		switch {
		case info.Role == "user":
			for _, p := range parts {
				partAt(p)
				switch p.Type {
				case "text":
					if p.Text != "" && !p.Synthetic && !p.Ignored {
						add(entry(core.KindUserMessage, p.ID,
							core.UserMessagePayload{Text: p.Text, MessageID: info.ID, PartID: p.ID}))
					}
				case "compaction":
					cp := p
					compactions[info.ID] = &cp
				default:
					add(harnessEvent(p.ID, "part."+p.Type, p.Raw))
				}
			}
		case info.isSummary():
			var text strings.Builder
			for _, p := range parts {
				if p.Type == "text" {
					text.WriteString(p.Text)
				}
			}
			add(compacted(compactions[info.ParentID], &info, text.String(), info.ID,
				compactedRaw{SummaryMessage: sm.Info}))
			// The summary's own model request costs too.
			for _, p := range parts {
				if p.Type == "step-finish" {
					add(stepUsage(p, &info, "")...)
				}
			}
		default:
			m := newEventMapper(info.SessionID)
			m.messages[info.ID] = &info
			for _, p := range parts {
				partAt(p)
				add(m.partEntries(p)...)
			}
			if info.Error != nil {
				at(info.Time.Completed)
				status := "error"
				if info.Error.Name == "MessageAbortedError" {
					status = "cancelled"
				}
				add(entry(core.KindSessionStatus, info.ID+":error", core.StatusPayload{
					Status: status, ErrorName: info.Error.Name, Message: info.Error.Data.Message}))
			}
		}
	}
}

// msTime is OpenCode's time in Unix milliseconds (zero: none, or one the
// record cannot hold).
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	t := time.UnixMilli(ms).UTC()
	if !core.Representable(t) {
		return time.Time{}
	}
	return t
}

// exportInfo is the "info" member of an `opencode export` document.
type exportInfo struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
	Model     *struct {
		ID         string `json:"id"`
		ProviderID string `json:"providerID"`
	} `json:"model"`
}

// streamExport reads an `opencode export` document from r one message at
// a time (a token walk over its one JSON object), handing entries to b.
// Text before the first "{" (the "Exporting session: …" line when stderr
// was captured too) is skipped.
func streamExport(ctx context.Context, r io.Reader, b *core.ImportBatcher) error {
	notExport := func(err error) error {
		return core.E(core.CodeInvalid, "opencode import: not an `opencode export` JSON document", err)
	}
	br := bufio.NewReaderSize(r, 256<<10)
	if _, err := br.ReadBytes('{'); err != nil {
		return notExport(fmt.Errorf("no JSON object: %w", err))
	}
	if err := br.UnreadByte(); err != nil {
		return notExport(err)
	}
	dec := json.NewDecoder(br)
	if err := jsonstream.ExpectDelim(dec, '{'); err != nil {
		return notExport(err)
	}
	mm := newMessageMapper(func(e core.NewEntry) { _ = b.Add(e) })
	var info exportInfo
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return notExport(err)
		}
		switch tok {
		case "info":
			if err := dec.Decode(&info); err != nil {
				return notExport(err)
			}
			if info.ID == "" {
				return core.Errorf(core.CodeInvalid, "opencode import: the document has no info.id (is it an `opencode export` file?)")
			}
			b.Head.NativeID, b.Head.Cwd, b.Head.Title = info.ID, info.Directory, info.Title
			if info.Model != nil {
				b.Head.Model = modelName(info.Model.ProviderID, info.Model.ID)
			}
		case "messages":
			if err := jsonstream.ExpectDelim(dec, '['); err != nil {
				return notExport(err)
			}
			for n := 0; dec.More(); n++ {
				if n%256 == 0 {
					if err := ctx.Err(); err != nil {
						return core.E(core.CodeCancelled, "opencode import", err)
					}
				}
				var sm storedMessage
				if err := dec.Decode(&sm); err != nil {
					return notExport(err)
				}
				mm.message(sm)
				if err := b.Err(); err != nil {
					return err
				}
			}
			if err := jsonstream.ExpectDelim(dec, ']'); err != nil {
				return notExport(err)
			}
		default:
			if err := jsonstream.SkipValue(dec); err != nil {
				return notExport(err)
			}
		}
	}
	if err := jsonstream.ExpectDelim(dec, '}'); err != nil {
		return notExport(err)
	}
	if info.ID == "" {
		return core.Errorf(core.CodeInvalid, "opencode import: the document has no info.id (is it an `opencode export` file?)")
	}
	return nil
}

// ImportStream reads an `opencode export` JSON file (session info and
// messages with parts) one message at a time and hands its entries to sink
// in batches (core.Importer).
func (h *Host) ImportStream(ctx context.Context, path string, sink core.ImportSink, progress func(done, total int64)) (core.ImportedSession, error) {
	if err := ctx.Err(); err != nil {
		return core.ImportedSession{}, core.E(core.CodeCancelled, "opencode import", err)
	}
	f, err := inputfile.Open(ctx, path, "opencode export", 0)
	if err != nil {
		return core.ImportedSession{}, err
	}
	defer f.Close()
	b := &core.ImportBatcher{Sink: sink}
	b.Ready = func() bool { return b.Head.NativeID != "" }
	cr := &countingReader{r: f, total: f.Size(), progress: progress}
	if err := streamExport(ctx, cr, b); err != nil {
		return core.ImportedSession{}, err
	}
	if err := b.Flush(); err != nil {
		return core.ImportedSession{}, err
	}
	if progress != nil {
		progress(cr.done, cr.total)
	}
	return b.Head, nil
}

// Import reads a whole export into memory, each NativeID once: for tests;
// imports stream.
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	is, err := core.CollectImport(ctx, h, path, progress)
	seen := map[string]bool{}
	kept := is.Entries[:0]
	for _, e := range is.Entries {
		if !seen[e.NativeID] {
			seen[e.NativeID] = true
			kept = append(kept, e)
		}
	}
	is.Entries = kept
	return is, err
}

// countingReader reports progress by bytes read, every 256 KiB.
type countingReader struct {
	r           io.Reader
	done, total int64
	last        int64
	progress    func(done, total int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.done += int64(n)
	if c.progress != nil && c.done-c.last >= 256<<10 {
		c.last = c.done
		c.progress(c.done, c.total)
	}
	return n, err
}
