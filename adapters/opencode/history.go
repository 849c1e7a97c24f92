package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/internal/inputfile"
)

// storedMessage is one element of GET /session/{id}/message and of the
// "messages" array of `opencode export`.
type storedMessage struct {
	Info  json.RawMessage   `json:"info"`
	Parts []json.RawMessage `json:"parts"`
}

// messagesEntries maps a session's stored messages to entries, in order.
// User text becomes user.message, assistant text assistant.message, tool
// parts tool.started/tool.completed, edits artifact.created, and a
// compaction part with its summary message one context.compacted. Every
// entry carries the part (or message) id as its NativeID, the same ids the
// live event mapping uses, so reading a session twice adds nothing.
func messagesEntries(msgs []storedMessage) []core.NewEntry {
	var out []core.NewEntry
	seen := map[string]bool{}
	add := func(es ...core.NewEntry) {
		for _, e := range es {
			if seen[e.NativeID] {
				continue
			}
			seen[e.NativeID] = true
			out = append(out, e)
		}
	}
	compactions := map[string]*part{} // user message id -> its compaction part
	for i, sm := range msgs {
		var info messageInfo
		if err := json.Unmarshal(sm.Info, &info); err != nil || info.ID == "" {
			add(harnessEvent(fmt.Sprintf("message#%d", i), "message.unreadable", sm.Info))
			continue
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
				switch p.Type {
				case "text":
					if p.Text != "" && !p.Synthetic && !p.Ignored {
						add(entry(core.KindUserMessage, p.ID,
							map[string]any{"text": p.Text, "messageId": info.ID, "partId": p.ID}))
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
				map[string]any{"summaryMessage": sm.Info}))
		default:
			m := newEventMapper(info.SessionID)
			m.messages[info.ID] = &info
			for _, p := range parts {
				add(m.partEntries(p)...)
			}
			if info.Error != nil {
				status := "error"
				if info.Error.Name == "MessageAbortedError" {
					status = "cancelled"
				}
				add(entry(core.KindSessionStatus, info.ID+":error", map[string]any{
					"status": status, "errorName": info.Error.Name, "message": info.Error.Data.Message}))
			}
		}
	}
	return out
}

// exportFile is what `opencode export <sessionID>` prints.
type exportFile struct {
	Info struct {
		ID        string `json:"id"`
		Title     string `json:"title"`
		Directory string `json:"directory"`
		Model     *struct {
			ID         string `json:"id"`
			ProviderID string `json:"providerID"`
		} `json:"model"`
	} `json:"info"`
	Messages []storedMessage `json:"messages"`
}

// parseExport reads an `opencode export` document. Text before the first
// "{" (the "Exporting session: …" line when stderr was captured too) is
// skipped.
func parseExport(data []byte) (core.ImportedSession, error) {
	if i := bytes.IndexByte(data, '{'); i > 0 {
		data = data[i:]
	}
	var f exportFile
	if err := json.Unmarshal(data, &f); err != nil {
		return core.ImportedSession{}, core.E(core.CodeInvalid, "opencode import: not an `opencode export` JSON document", err)
	}
	if f.Info.ID == "" {
		return core.ImportedSession{}, core.Errorf(core.CodeInvalid, "opencode import: the document has no info.id (is it an `opencode export` file?)")
	}
	out := core.ImportedSession{NativeID: f.Info.ID, Cwd: f.Info.Directory, Title: f.Info.Title,
		Entries: messagesEntries(f.Messages)}
	if f.Info.Model != nil {
		out.Model = modelName(f.Info.Model.ProviderID, f.Info.Model.ID)
	}
	return out, nil
}

// Import reads an `opencode export` JSON file (session info and messages
// with parts) into entries (core.Importer).
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	if err := ctx.Err(); err != nil {
		return core.ImportedSession{}, core.E(core.CodeCancelled, "opencode import", err)
	}
	data, err := inputfile.ReadFile(ctx, path, "opencode export", 0)
	if err != nil {
		return core.ImportedSession{}, err
	}
	s, err := parseExport(data)
	if err != nil {
		return core.ImportedSession{}, err
	}
	if progress != nil {
		progress(int64(len(data)), int64(len(data)))
	}
	return s, nil
}
