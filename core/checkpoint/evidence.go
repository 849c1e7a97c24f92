package checkpoint

import (
	"bytes"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// Evidence is what the record proves happened since the last boundary:
// durable decisions and touched files, trimmed and de-duplicated keeping the
// first occurrence.
type Evidence struct {
	// BoundaryEntryID is the newest `compaction` entry the scan started
	// after ("" when the branch has none and the scan covered it all).
	BoundaryEntryID string `json:"boundaryEntryId,omitempty"`
	// Scanned is the number of entries looked at.
	Scanned int `json:"scanned"`
	// Decisions come from the checkpoint the boundary committed (carried
	// forward so no durable decision is lost), later `checkpoint` entries
	// and `worker.result` decisions, in record order.
	Decisions []string `json:"decisions"`
	// Files come from `worker.result` filesChanged and `artifact.created`
	// path, in record order.
	Files []string `json:"files"`
}

// Empty reports whether the scan found nothing.
func (e Evidence) Empty() bool { return len(e.Decisions) == 0 && len(e.Files) == 0 }

// ScanEvidence collects the evidence on branch (root first) after the newest
// `compaction` entry. Only the payloads of worker.result, artifact.created
// and checkpoint entries are decoded, so a long branch costs one pass over
// the kinds. Payload items that are not strings, and payloads that do not
// parse, are skipped: evidence is what the record clearly states.
func ScanEvidence(branch []core.Entry) Evidence {
	b := LastBoundary(branch)
	var ev Evidence
	decisions := newDeduper()
	files := newDeduper()
	if b >= 0 {
		ev.BoundaryEntryID = branch[b].ID
		if ref := memberString(branch[b].Payload, "checkpointEntryId"); ref != "" {
			if i := findBack(branch, b-1, ref); i >= 0 && branch[i].Kind == core.KindCheckpoint {
				eachMemberString(branch[i].Payload, "decisions", decisions.addBytes)
			}
		}
	}
	tail := branch[b+1:]
	ev.Scanned = len(tail)
	for i := range tail {
		e := &tail[i]
		switch e.Kind {
		case core.KindWorkerResult:
			eachMemberString(e.Payload, "decisions", decisions.addBytes)
			eachMemberString(e.Payload, "filesChanged", files.addBytes)
		case core.KindArtifactCreated:
			files.add(memberString(e.Payload, "path"))
		case core.KindCheckpoint:
			eachMemberString(e.Payload, "decisions", decisions.addBytes)
		}
	}
	ev.Decisions = decisions.items
	ev.Files = files.items
	return ev
}

// findBack returns the index of the entry with id at or before from, or -1.
func findBack(branch []core.Entry, from int, id string) int {
	for i := from; i >= 0; i-- {
		if branch[i].ID == id {
			return i
		}
	}
	return -1
}

// deduper keeps trimmed, non-empty strings in first-seen order.
type deduper struct {
	items []string
	seen  map[string]struct{}
}

func newDeduper() *deduper { return &deduper{seen: map[string]struct{}{}} }

func (d *deduper) add(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	if _, ok := d.seen[s]; ok {
		return false
	}
	d.seen[s] = struct{}{}
	d.items = append(d.items, s)
	return true
}

// addBytes is add for a byte slice, allocating only for a new item.
func (d *deduper) addBytes(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	if _, ok := d.seen[string(b)]; ok {
		return
	}
	s := string(b)
	d.seen[s] = struct{}{}
	d.items = append(d.items, s)
}

// Dedupe trims each item, drops empty ones and keeps the first occurrence of
// each, preserving order. It returns nil for an empty result.
func Dedupe(items []string) []string {
	d := deduper{seen: make(map[string]struct{}, len(items))}
	for _, s := range items {
		d.add(s)
	}
	return d.items
}
