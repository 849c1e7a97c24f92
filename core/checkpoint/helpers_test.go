package checkpoint

import (
	"fmt"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// branchBuilder builds an active branch (root first) the way a store would:
// ids, parents, sequence numbers and times in order.
type branchBuilder struct {
	entries []core.Entry
	now     time.Time
}

func newBranch() *branchBuilder {
	return &branchBuilder{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
}

// add appends an entry of kind with payload (any JSON-able value) and
// returns its id.
func (b *branchBuilder) add(kind core.Kind, payload any) string {
	return b.addID(fmt.Sprintf("e%d", len(b.entries)+1), kind, payload)
}

func (b *branchBuilder) addID(id string, kind core.Kind, payload any) string {
	parent := ""
	if n := len(b.entries); n > 0 {
		parent = b.entries[n-1].ID
	}
	b.now = b.now.Add(time.Second)
	b.entries = append(b.entries, core.Entry{
		ID: id, SessionID: "s1", ParentID: parent, Seq: int64(len(b.entries) + 1),
		Kind: kind, Payload: core.Payload(payload), CreatedAt: b.now,
	})
	return id
}

func (b *branchBuilder) user(text string) string {
	return b.add(core.KindUserMessage, map[string]any{"text": text})
}

func (b *branchBuilder) assistant(text string) string {
	return b.add(core.KindAssistantMessage, map[string]any{"text": text})
}

func (b *branchBuilder) toolStart(id string) string {
	return b.add(core.KindToolStarted, map[string]any{"toolId": id, "name": "Bash", "input": map[string]any{"command": "ls"}})
}

func (b *branchBuilder) toolDone(id string) string {
	return b.add(core.KindToolCompleted, map[string]any{"toolId": id, "name": "Bash", "output": "ok"})
}

func (b *branchBuilder) worker(decisions, files []string) string {
	return b.add(core.KindWorkerResult, map[string]any{"status": "ok", "decisions": decisions, "filesChanged": files})
}

func (b *branchBuilder) artifact(path string) string {
	return b.add(core.KindArtifactCreated, map[string]any{"path": path})
}

// commit appends a whole checkpoint commit (checkpoint, compaction,
// marker) as CommitEntries lays it out, and returns the checkpoint entry id.
// When firstRetained is "" the marker id is used as firstRetainedEntryId.
func (b *branchBuilder) commit(cp Checkpoint, firstRetained string) string {
	n := len(b.entries)
	cpID, markerID := fmt.Sprintf("cp%d", n), fmt.Sprintf("mk%d", n)
	if firstRetained == "" {
		cp.FirstRetainedEntryID = markerID
	} else {
		cp.FirstRetainedEntryID = firstRetained
	}
	for i, ne := range CommitEntries(cp, cpID, markerID) {
		id := ne.ID
		if id == "" {
			id = fmt.Sprintf("bd%d-%d", n, i)
		}
		var payload any = ne.Payload
		b.addID(id, ne.Kind, payload)
	}
	return cpID
}

func validCP(summary string, decisions ...string) Checkpoint {
	return Checkpoint{SchemaVersion: 1, Summary: summary, Decisions: decisions, FilesTouched: []string{},
		SourceAgent: "s1", Reason: ReasonManual, Provenance: ProvenanceAgent}
}

func ids(entries []core.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}
