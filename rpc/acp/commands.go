package acp

import (
	"context"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/schema"
)

// command is one of Bridge's own slash commands: a prompt "/name arg" runs
// it instead of a harness turn. Any other slash command is the harness's
// own and passes through as the prompt's text.
type command struct {
	name, description, hint string
	run                     func(s *Server, ctx context.Context, sessionID, arg string) (string, error)
}

// commands are Bridge's slash commands, in the order they are announced.
var commands = []command{
	{"compact", "Compact the context: the harness's own compaction, or a Bridge checkpoint where it has none", "optional focus",
		(*Server).compactCmd},
	{"checkpoint", "Write a Bridge checkpoint of this session now", "", (*Server).checkpointCmd},
	{"fork", "Start a new session from this one's projection (its id is returned)", "", (*Server).forkCmd},
	{"migrate", "Write a five-part handoff to another harness; edit it and send it back with /migrate-go", "HARNESS [preset]",
		(*Server).migrateCmd},
	{"migrate-go", "Start the migration target from a handoff /migrate wrote (edited or not)", "PREVIEW-ID, then the handoff text",
		(*Server).migrateGoCmd},
	{"search", "Search every recorded session's text", "QUERY", (*Server).searchCmd},
}

func commandNamed(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// announceCommands sends the session's available_commands_update.
func (s *Server) announceCommands(sessionID string) {
	list := make([]availableCommand, 0, len(commands))
	for _, c := range commands {
		m := availableCommand{Name: c.name, Description: c.description}
		if c.hint != "" {
			m.Input = &commandInput{Hint: c.hint}
		}
		list = append(list, m)
	}
	s.send(sessionID, update{SessionUpdate: "available_commands_update", AvailableCommands: list})
}

func (s *Server) compactCmd(ctx context.Context, id, focus string) (string, error) {
	r, err := s.b.SessionCompact(ctx, schema.SessionCompactParams{SessionID: id, Focus: focus})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if r.By == schema.CompactedByHarness {
		b.WriteString("[Bridge] The harness compacted its context.")
	} else {
		b.WriteString("[Bridge] The harness has no compaction command: Bridge wrote a checkpoint instead (the provider's window did not shrink).")
	}
	if focus != "" && !r.FocusApplied {
		fmt.Fprintf(&b, " The focus was not applied: %s.", r.FocusNote)
	}
	return b.String() + "\n", nil
}

func (s *Server) checkpointCmd(ctx context.Context, id, _ string) (string, error) {
	r, err := s.b.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: id})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("[Bridge] Checkpoint saved (%s, %s): entry %s\n", r.Reason, r.Provenance, r.EntryID), nil
}

func (s *Server) forkCmd(ctx context.Context, id, _ string) (string, error) {
	r, err := s.b.SessionFork(ctx, schema.SessionForkParams{SessionID: id})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("[Bridge] Forked into session %s (%s, %d entries projected). Load it to continue there.\n",
		r.SessionID, r.Harness, r.ProjectedEntries), nil
}

func (s *Server) migrateCmd(ctx context.Context, id, arg string) (string, error) {
	f := strings.Fields(arg)
	if len(f) == 0 || len(f) > 2 {
		return "", badParams("usage: /migrate HARNESS [preset]")
	}
	t := schema.MigrationTarget{Harness: f[0]}
	if len(f) == 2 {
		t.Preset = f[1]
	}
	r, err := s.b.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: id, Target: t})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[Bridge] Handoff to %s written (preview %s, file %s).", t.Harness, r.PreviewID, r.Path)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\nWarning: %s", w)
	}
	fmt.Fprintf(&b, "\nTo start the target, send it back, edited as you like:\n\n/migrate-go %s\n%s\n", r.PreviewID, r.Summary)
	return b.String(), nil
}

func (s *Server) migrateGoCmd(ctx context.Context, _, arg string) (string, error) {
	first, rest, _ := strings.Cut(arg, "\n")
	first = strings.TrimSpace(first)
	if first == "" || strings.ContainsAny(first, " \t") {
		return "", badParams("usage: /migrate-go PREVIEW-ID, then the handoff text on the following lines")
	}
	r, err := s.b.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: first, Summary: strings.TrimSpace(rest)})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[Bridge] Migrated: the target session is %s (kickoff sent: %t). Load it to continue there.", r.TargetSessionID, r.KickoffSent)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\nWarning: %s", w)
	}
	return b.String() + "\n", nil
}

func (s *Server) searchCmd(ctx context.Context, _, q string) (string, error) {
	if q == "" {
		return "", badParams("usage: /search QUERY")
	}
	r, err := s.b.SessionSearch(ctx, schema.SessionSearchParams{Query: q, Limit: 20})
	if err != nil {
		return "", err
	}
	if len(r.Hits) == 0 {
		return fmt.Sprintf("[Bridge] No recorded session mentions %q.\n", q), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[Bridge] %d match(es) for %q:\n", len(r.Hits), q)
	for _, h := range r.Hits {
		title := h.SessionTitle
		if title == "" {
			title = h.SessionID
		}
		fmt.Fprintf(&b, "- %s (%s, %s, entry %d): %s\n", title, h.SessionID, h.Harness, h.Seq, oneLine(h.Snippet))
	}
	return b.String(), nil
}
