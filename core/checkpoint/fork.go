package checkpoint

import (
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// ProjectFork builds the projection a fork starts from: path is the source
// branch from its root to the fork point (inclusive). With a valid
// checkpoint on path it is Project's projection of path; without one it is
// the whole conversation of path (bookkeeping and checkpoint exchanges left
// out) under the same budget. Either way a tool call whose result comes
// after the fork point is dropped, so no tool.started is left without its
// tool.completed, and the budget cut never separates a pair.
func ProjectFork(path []core.Entry, opt ProjectOptions) Projection {
	p, err := Project(path, opt)
	if err != nil {
		p = Projection{Skipped: p.Skipped}
		p.Retained = conversation(path)
		if cut := budgetCut(p.Retained, opt.Budget); cut > 0 {
			if moved := keepToolPairs(p.Retained, 0, cut); moved < cut {
				p.Widened = true
				cut = moved
			}
			p.Omitted = cut
			p.Retained = p.Retained[cut:]
		}
		p.Model, p.Effort = opt.Model, opt.Effort
		if p.Model == "" || p.Effort == "" {
			m, e := latestModelEffort(path)
			if p.Model == "" {
				p.Model = m
			}
			if p.Effort == "" {
				p.Effort = e
			}
		}
	}
	p.Retained = closedTools(p.Retained)
	return p
}

// closedTools returns es without the tool.started entries whose
// tool.completed is not in es.
func closedTools(es []core.Entry) []core.Entry {
	results := map[string]int{}
	for _, e := range es {
		if e.Kind == core.KindToolCompleted {
			results[toolID(e.Payload)]++
		}
	}
	out := make([]core.Entry, 0, len(es))
	for _, e := range es {
		if e.Kind == core.KindToolStarted {
			id := toolID(e.Payload)
			if results[id] == 0 {
				continue
			}
			results[id]--
		}
		out = append(out, e)
	}
	return out
}

// ForkSource names where a fork comes from, for RenderFork.
type ForkSource struct {
	SessionID string
	EntryID   string
	Harness   string
	Title     string
}

// RenderFork renders a fork's projection as the first prompt of the new
// session: a preamble naming the source, the checkpoint's summary,
// decisions, files and open work when there is one, the model, and the
// conversation up to the fork point, each entry on its own line.
func RenderFork(src ForkSource, p Projection) string {
	var b strings.Builder
	b.WriteString("# Forked conversation\n\n")
	fmt.Fprintf(&b, "This session continues a conversation held with %s (Bridge session %s", src.Harness, src.SessionID)
	if src.Title != "" {
		fmt.Fprintf(&b, ", %q", oneLine(src.Title))
	}
	fmt.Fprintf(&b, "), as it stood at entry %s. Treat it as your own memory of the work and carry on from there; do not redo finished work, and wait for the user's next request.\n", src.EntryID)
	heading := "Conversation so far"
	if p.CheckpointEntryID != "" {
		b.WriteString("\n## Summary\n\n")
		writeCheckpoint(&b, p.Checkpoint)
		heading = "Conversation after the summary"
	}
	writeModel(&b, "Model of the source", p)
	writeRetained(&b, heading, p)
	return b.String()
}
