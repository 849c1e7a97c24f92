package library

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// ExportHarness is the harness name under which Import reads a lossless
// export document.
const ExportHarness = "bridge"

// exportMarkdown renders the active branch of a session for reading: the
// messages in order, each tool call folded into a <details> block,
// compaction and checkpoint boundaries marked as such, images referenced by
// their digest (the bytes are in the record, and in the JSON export).
func (s *Library) exportMarkdown(ctx context.Context, sessionID string) (string, error) {
	sess, err := s.opts.Store.GetSession(ctx, sessionID)
	if err != nil {
		return "", err
	}
	branch, err := s.opts.Store.ActiveBranch(ctx, sessionID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	title := sess.Title
	if title == "" {
		title = "Session " + sess.ID
	}
	fmt.Fprintf(&b, "# %s\n\n", oneLineMD(title))
	fmt.Fprintf(&b, "- session: `%s`\n- harness: %s\n", sess.ID, sess.Harness)
	if sess.Cwd != "" {
		fmt.Fprintf(&b, "- working directory: `%s`\n", sess.Cwd)
	}
	if sess.Model != "" {
		fmt.Fprintf(&b, "- model: %s\n", sess.Model)
	}
	fmt.Fprintf(&b, "- created: %s\n- entries on the active branch: %d\n", sess.CreatedAt.Format(time.RFC3339), len(branch))
	tools := map[string]core.Entry{} // started, awaiting completion
	for _, e := range branch {
		// A member that is not a string reads as "".
		var p mdFields
		_ = json.Unmarshal(e.Payload, &p)
		switch e.Kind {
		case core.KindUserMessage, core.KindAssistantMessage:
			who := "User"
			if e.Kind == core.KindAssistantMessage {
				who = "Assistant"
			}
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", who, strings.TrimSpace(p.Text))
			for i, a := range entryAttachments(e) {
				// No link: the image is kept in the record, not as a file
				// beside the export; the JSON form carries its bytes.
				fmt.Fprintf(&b, "\n*Image %d: %s, %d bytes, sha256 %s (in the JSON export).*\n", i+1, a.MediaType, a.Bytes, a.SHA256)
			}
		case core.KindToolStarted:
			tools[p.ToolID] = e
		case core.KindToolCompleted:
			started, ok := tools[p.ToolID]
			delete(tools, p.ToolID)
			writeTool(&b, started, ok, e)
		case core.KindContextCompacted:
			fmt.Fprintf(&b, "\n---\n\n> **Context compacted** by %s (%s)", p.Harness, p.Trigger)
			if sum := p.Summary; sum != "" {
				fmt.Fprintf(&b, "\n>\n%s", quoteMD(sum))
			}
			b.WriteString("\n\n---\n")
		case core.KindCheckpoint:
			fmt.Fprintf(&b, "\n---\n\n> **Checkpoint** (%s, %s)\n>\n%s\n\n---\n", p.Reason, p.Provenance, quoteMD(p.Summary))
		case core.KindCompaction:
			fmt.Fprintf(&b, "\n> **Compaction boundary**: the context restarts from checkpoint `%s`\n", p.CheckpointEntryID)
		case core.KindBranchSummary:
			fmt.Fprintf(&b, "\n> **Earlier conversation, summarised**\n>\n%s\n", quoteMD(p.Summary))
		case core.KindMigrationHandoff:
			fmt.Fprintf(&b, "\n> **Handoff from session `%s`**\n>\n%s\n", p.SourceSessionID, quoteMD(p.Summary))
		case core.KindSessionRestored:
			fmt.Fprintf(&b, "\n> _Session restored (%s)_\n", p.Mode)
		}
	}
	for _, e := range branch { // tools that never completed, in order
		if e.Kind == core.KindToolStarted {
			var p struct {
				ToolID string `json:"toolId"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			if started, ok := tools[p.ToolID]; ok && started.ID == e.ID {
				writeTool(&b, started, true, core.Entry{})
			}
		}
	}
	return b.String(), nil
}

// writeTool renders one tool call folded; completed is the zero Entry when
// the call never finished.
func writeTool(b *strings.Builder, started core.Entry, hasStart bool, completed core.Entry) {
	var sp, cp map[string]any
	_ = json.Unmarshal(started.Payload, &sp)
	_ = json.Unmarshal(completed.Payload, &cp)
	name, _ := sp["name"].(string)
	if name == "" {
		name, _ = cp["name"].(string)
	}
	if name == "" {
		name = "tool"
	}
	title, _ := sp["title"].(string)
	summary := "Tool: " + oneLineMD(name)
	if title != "" {
		summary += " — " + oneLineMD(title)
	}
	if completed.ID == "" {
		summary += " (no result recorded)"
	}
	fmt.Fprintf(b, "\n<details><summary>%s</summary>\n\n", escapeHTML(summary))
	if hasStart {
		for _, k := range []string{"input", "command", "arguments"} {
			if v, ok := sp[k]; ok {
				b.WriteString(fence(jsonText(v), ""))
				break
			}
		}
	}
	if completed.ID != "" {
		for _, k := range []string{"output", "error", "result"} {
			if v, ok := cp[k]; ok {
				b.WriteString(fence(jsonText(v), ""))
			}
		}
	}
	b.WriteString("</details>\n")
}

// jsonText is a string as is, anything else as indented JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(out)
}

// fence puts text in a code block whose fence is longer than any run of
// backticks inside it.
func fence(text, lang string) string {
	longest, run := 0, 0
	for _, c := range text {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + f + "\n\n"
}

func quoteMD(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

func oneLineMD(s string) string { return strings.Join(strings.Fields(s), " ") }

func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// mdFields are the payload members the Markdown export reads, of every
// kind it renders.
type mdFields struct {
	Text              string `json:"text"`
	ToolID            string `json:"toolId"`
	Harness           string `json:"harness"`
	Trigger           string `json:"trigger"`
	Summary           string `json:"summary"`
	Reason            string `json:"reason"`
	Provenance        string `json:"provenance"`
	CheckpointEntryID string `json:"checkpointEntryId"`
	SourceSessionID   string `json:"sourceSessionId"`
	Mode              string `json:"mode"`
}
