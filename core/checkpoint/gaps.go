package checkpoint

import (
	"path"
	"strings"
	"unicode"
)

// GapReport counts what a checkpoint holds after gap repair.
type GapReport struct {
	// Decisions and Files are the totals in the repaired checkpoint.
	Decisions int `json:"decisionCount"`
	Files     int `json:"fileCount"`
	// AppendedDecisions and AppendedFiles are how many Bridge added.
	AppendedDecisions int `json:"appendedDecisions"`
	AppendedFiles     int `json:"appendedFiles"`
	// Provenance is "agent+controller" when anything was appended, else
	// "agent".
	Provenance Provenance `json:"provenance"`
}

// Appended is the number of items Bridge added.
func (r GapReport) Appended() int { return r.AppendedDecisions + r.AppendedFiles }

// FillGaps appends to d (normalised first) every decision and file of ev
// that the reply left out, in evidence order, and reports the counts and
// provenance.
//
// A decision counts as present when it matches one in the reply ignoring
// case, surrounding punctuation and runs of white space. A file counts as
// present when the paths are equal after cleaning ("./a/b" = "a/b") or one
// is the other with leading directories ("/repo/a/b" covers "a/b").
func FillGaps(d Draft, ev Evidence) (Draft, GapReport) {
	d = d.Normalize()
	rep := GapReport{Provenance: ProvenanceAgent}

	have := make(map[string]struct{}, len(d.Decisions))
	for _, s := range d.Decisions {
		have[decisionKey(s)] = struct{}{}
	}
	for _, s := range ev.Decisions {
		k := decisionKey(s)
		if _, ok := have[k]; ok {
			continue
		}
		have[k] = struct{}{}
		d.Decisions = append(d.Decisions, strings.TrimSpace(s))
		rep.AppendedDecisions++
	}

	files := newFileSet(d.FilesTouched)
	for _, f := range ev.Files {
		if files.covers(f) {
			continue
		}
		files.add(f)
		d.FilesTouched = append(d.FilesTouched, strings.TrimSpace(f))
		rep.AppendedFiles++
	}
	d.Decisions = Dedupe(d.Decisions)
	d.FilesTouched = Dedupe(d.FilesTouched)

	rep.Decisions = len(d.Decisions)
	rep.Files = len(d.FilesTouched)
	if rep.Appended() > 0 {
		rep.Provenance = ProvenanceAgentController
	}
	return d, rep
}

// decisionKey folds a decision for comparison: lower case, white space runs
// collapsed, surrounding punctuation dropped.
func decisionKey(s string) string {
	s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// cleanPath normalises a file path for comparison.
func cleanPath(p string) string {
	p = strings.TrimSpace(strings.ReplaceAll(p, "\\", "/"))
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// fileSet answers "is this path already listed" by exact cleaned path or by
// a path suffix on a directory boundary (looked up by base name, so large
// lists stay cheap).
type fileSet struct {
	exact  map[string]struct{}
	byBase map[string][]string
}

func newFileSet(paths []string) *fileSet {
	fs := &fileSet{exact: make(map[string]struct{}, len(paths)), byBase: make(map[string][]string, len(paths))}
	for _, p := range paths {
		fs.add(p)
	}
	return fs
}

func (fs *fileSet) add(p string) {
	c := cleanPath(p)
	if c == "" {
		return
	}
	if _, ok := fs.exact[c]; !ok {
		fs.exact[c] = struct{}{}
		b := path.Base(c)
		fs.byBase[b] = append(fs.byBase[b], c)
	}
}

func (fs *fileSet) covers(p string) bool {
	c := cleanPath(p)
	if c == "" {
		return true // nothing to add
	}
	if _, ok := fs.exact[c]; ok {
		return true
	}
	for _, have := range fs.byBase[path.Base(c)] {
		if strings.HasSuffix(have, "/"+c) || strings.HasSuffix(c, "/"+have) {
			return true
		}
	}
	return false
}
