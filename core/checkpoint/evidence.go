package checkpoint

import (
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
// `compaction` entry, starting with the decisions of the checkpoint that
// boundary commits (the newest checkpoint entry before it, as a commit
// writes them; a boundary naming any other entry carries nothing). Only the
// payloads of worker.result, artifact.created and checkpoint entries are
// decoded. Payload items that are not strings, and payloads that do not
// parse, are skipped: evidence is what the record clearly states. It is
// EvidenceOf(WindowOf(branch)): the answer a store's window summary gives
// without reading the branch.
func ScanEvidence(branch []core.Entry) Evidence { return EvidenceOf(WindowOf(branch)) }

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

// Dedupe trims each item, drops empty ones and keeps the first occurrence of
// each, preserving order. It returns nil for an empty result.
func Dedupe(items []string) []string {
	d := deduper{seen: make(map[string]struct{}, len(items))}
	for _, s := range items {
		d.add(s)
	}
	return d.items
}
