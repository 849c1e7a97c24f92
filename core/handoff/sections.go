// Package handoff holds the pure parts of migration (ARCHITECTURE.md, Migration): folding a
// source session into a bounded text, the summary worker's instruction, the
// five-part handoff's parser and validator, visual evidence, and the
// kickoff text. It does no I/O; rpc/service runs the flow.
package handoff

import (
	"fmt"
	"strings"
)

// Part identifies one of the five handoff sections.
type Part int

// The five parts, in the order a handoff must give them.
const (
	Goal Part = iota
	CurrentState
	KeyDecisions
	KeyFiles
	NextStep
	numParts
)

// Headings per language, indexed by Part.
var headings = map[string][numParts]string{
	"en": {"Goal", "Current state", "Key decisions & conventions", "Key files", "Next step"},
	"zh": {"目标", "当前状态", "关键决策与约定", "关键文件", "下一步"},
}

// aliases are other spellings accepted when reading an edited handoff.
var aliases = map[string]Part{
	"key decisions and conventions": KeyDecisions,
	"key decisions":                 KeyDecisions,
	"decisions & conventions":       KeyDecisions,
	"next steps":                    NextStep,
	"关键决策":                          KeyDecisions,
}

// Heading returns the heading of part p in lang ("en" or "zh").
func Heading(lang string, p Part) string {
	h, ok := headings[lang]
	if !ok {
		h = headings["en"]
	}
	return h[p]
}

// Section is one "## Title" block of a handoff.
type Section struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// Handoff is a parsed five-part handoff. Extra holds sections after the
// five (such as visual evidence), kept verbatim.
type Handoff struct {
	Lang     string
	Sections [numParts]Section
	Extra    []Section
	Preamble string // text before the first heading (normally empty)
}

// IsSectionTitle tells whether title is the heading of one of the five
// parts (in any language or accepted spelling).
func IsSectionTitle(title string) bool {
	_, ok := partOf(title)
	return ok
}

// partOf maps a heading to its part.
func partOf(title string) (Part, bool) {
	t := strings.ToLower(strings.TrimSpace(strings.TrimRight(title, ":：")))
	for _, hs := range headings {
		for i, h := range hs {
			if strings.ToLower(h) == t {
				return Part(i), true
			}
		}
	}
	p, ok := aliases[t]
	return p, ok
}

// SplitSections splits Markdown into its "## " sections (level-2 headings
// only; deeper headings stay in the body). Text before the first heading is
// returned as preamble.
func SplitSections(md string) (preamble string, secs []Section) {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	var cur *Section
	var pre strings.Builder
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.Body = strings.TrimSpace(body.String())
			secs = append(secs, *cur)
			body.Reset()
		}
	}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "## ") {
			flush()
			cur = &Section{Title: strings.TrimSpace(line[3:])}
			continue
		}
		if cur == nil {
			pre.WriteString(line)
			pre.WriteString("\n")
		} else {
			body.WriteString(line)
			body.WriteString("\n")
		}
	}
	flush()
	return strings.TrimSpace(pre.String()), secs
}

// Parse reads a five-part handoff and validates it: each of the five parts
// present exactly once, in order, with a non-empty body; headings in English
// or Chinese (not mixed). Sections after the fifth are kept in Extra.
func Parse(md string) (Handoff, error) {
	pre, secs := SplitSections(md)
	h := Handoff{Preamble: pre}
	next := Goal
	var problems []string
	for _, s := range secs {
		p, ok := partOf(s.Title)
		if !ok || next == numParts {
			if next == numParts {
				h.Extra = append(h.Extra, s)
				continue
			}
			problems = append(problems, fmt.Sprintf("unexpected section %q before %q", s.Title, Heading("en", next)))
			continue
		}
		if p != next {
			if p < next {
				problems = append(problems, fmt.Sprintf("section %q appears twice or out of order", s.Title))
			} else {
				problems = append(problems, fmt.Sprintf("section %q is missing before %q", Heading("en", next), s.Title))
			}
			next = p
		}
		if s.Body == "" {
			problems = append(problems, fmt.Sprintf("section %q is empty", s.Title))
		}
		lang := langOfHeading(s.Title)
		if h.Lang == "" {
			h.Lang = lang
		} else if lang != h.Lang && lang != "" {
			problems = append(problems, fmt.Sprintf("section %q mixes languages", s.Title))
		}
		h.Sections[p] = s
		next = p + 1
	}
	for p := next; p < numParts; p++ {
		problems = append(problems, fmt.Sprintf("section %q is missing", Heading("en", p)))
	}
	if len(problems) > 0 {
		return h, fmt.Errorf("handoff: %s", strings.Join(problems, "; "))
	}
	return h, nil
}

func langOfHeading(title string) string {
	for _, r := range title {
		if isCJK(r) {
			return "zh"
		}
	}
	return "en"
}

// Markdown renders the handoff back to text.
func (h Handoff) Markdown() string {
	var b strings.Builder
	if h.Preamble != "" {
		b.WriteString(h.Preamble)
		b.WriteString("\n\n")
	}
	all := append(h.Sections[:], h.Extra...)
	for i, s := range all {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "## %s\n%s\n", s.Title, s.Body)
	}
	return b.String()
}

// Files returns the paths listed under Key files, one per line, with list
// markers, backquotes and trailing notes in parentheses removed.
func (h Handoff) Files() []string {
	var out []string
	for _, line := range strings.Split(h.Sections[KeyFiles].Body, "\n") {
		l := strings.TrimSpace(line)
		l = strings.TrimLeft(l, "-*• ")
		if strings.HasPrefix(l, "(") || strings.HasPrefix(l, "（") {
			continue // a note such as "(none available from the material)"
		}
		if i := strings.IndexAny(l, "（("); i > 0 {
			l = l[:i]
		}
		if i := strings.Index(l, " — "); i > 0 {
			l = l[:i]
		}
		l = strings.Trim(strings.TrimSpace(l), "`")
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// UnsupportedFiles lists Key files paths that appear nowhere in source: the
// worker may name only paths from the material.
func (h Handoff) UnsupportedFiles(source string) []string {
	var out []string
	for _, f := range h.Files() {
		if !strings.Contains(source, f) {
			out = append(out, f)
		}
	}
	return out
}
