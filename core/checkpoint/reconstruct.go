package checkpoint

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// GitFile is one line of `git status --porcelain` (format v1).
type GitFile struct {
	// Status is the two-letter XY code ("M ", " M", "??", "R ", "A ", …).
	Status string `json:"status"`
	// Path is the file's path (the new path of a rename or copy).
	Path string `json:"path"`
	// OrigPath is the old path of a rename or copy.
	OrigPath string `json:"origPath,omitempty"`
}

// ParseGitStatus parses the output of `git status --porcelain` (v1, with or
// without -b). Quoted paths (names with spaces or unusual bytes) are
// unquoted; "## branch" headers and "!!" ignored files are skipped. The
// files of the good lines are always returned; the error (CodeInvalid) names
// the first malformed line.
func ParseGitStatus(text string) ([]GitFile, error) {
	var files []GitFile
	var firstErr error
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || strings.HasPrefix(line, "## ") {
			continue
		}
		if len(line) < 4 || line[2] != ' ' {
			if firstErr == nil {
				firstErr = core.Errorf(core.CodeInvalid, "git status line %d is not in porcelain format: %q", n+1, line)
			}
			continue
		}
		f := GitFile{Status: line[:2]}
		if f.Status == "!!" {
			continue
		}
		rest := line[3:]
		if f.Status[0] == 'R' || f.Status[0] == 'C' || f.Status[1] == 'R' || f.Status[1] == 'C' {
			if from, to, ok := splitRename(rest); ok {
				f.OrigPath, rest = unquote(from), to
			}
		}
		f.Path = unquote(rest)
		if f.Path == "" {
			if firstErr == nil {
				firstErr = core.Errorf(core.CodeInvalid, "git status line %d has no path: %q", n+1, line)
			}
			continue
		}
		files = append(files, f)
	}
	return files, firstErr
}

// splitRename splits "from -> to", respecting quoted names.
func splitRename(s string) (string, string, bool) {
	if strings.HasPrefix(s, "\"") {
		if end := closingQuote(s); end > 0 && strings.HasPrefix(s[end+1:], " -> ") {
			return s[:end+1], s[end+5:], true
		}
		return "", "", false
	}
	from, to, ok := strings.Cut(s, " -> ")
	return from, to, ok
}

func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unquote undoes git's C-style quoting of a path; an unquoted path is
// returned as is.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}

// Reconstructed is a recovery checkpoint and what went into it.
type Reconstructed struct {
	Checkpoint Checkpoint `json:"checkpoint"`
	// Evidence is the scan the decisions and files came from.
	Evidence Evidence `json:"evidence"`
	// GitFiles are the files the repository status listed.
	GitFiles []GitFile `json:"gitFiles,omitempty"`
	// Warnings name input that could not be used (a malformed status line).
	Warnings []string `json:"warnings,omitempty"`
}

// Reconstruction limits.
const (
	recentAssistant = 6    // assistant messages quoted
	maxQuote        = 1200 // bytes kept of each quoted message
)

// Reconstruct builds a recovery checkpoint for a session whose process is
// dead, from the record and the repository: the last user goal, the recent
// assistant messages, the summary of the previous valid checkpoint, the
// decisions and files of ScanEvidence, and the files gitStatus lists
// (`git status --porcelain` output; "" when there is no repository). The
// checkpoint has provenance "reconstructed"; b fills the bookkeeping (an
// empty reason becomes phase_boundary, as upstream). An open tool call or
// approval becomes open work. It is ReconstructFrom(RecoveryOf(branch), …).
//
// A branch with no message, no evidence and no changed file since the last
// boundary has nothing to recover: a CodeSummary error wrapping
// ErrEmptySummary.
func Reconstruct(branch []core.Entry, gitStatus string, b Bookkeeping) (Reconstructed, error) {
	return ReconstructFrom(RecoveryOf(branch), gitStatus, b)
}

// Recovery is what a reconstruction reads from the record.
type Recovery struct {
	// Evidence is ScanEvidence's (EvidenceOf a window).
	Evidence Evidence
	// Activity gives the tool calls and approvals still open.
	Activity Activity
	// Goal is the newest user message after the boundary whose text is not
	// blank (trimmed; "" when none).
	Goal string
	// Assistant are the newest non-blank assistant messages after the
	// boundary (trimmed), newest first, at most RecentAssistant.
	Assistant []string
	// Earlier is the newest valid checkpoint on the branch, if any.
	Earlier *Checkpoint
	// Running says the harness process is still running: it cannot fork and
	// its preset does not ask for the live thread, so Bridge rebuilds the
	// checkpoint instead of asking the model.
	Running bool
}

// RecentAssistant is how many assistant messages a reconstruction quotes.
const RecentAssistant = recentAssistant

// RecoveryOf reads a Recovery from a whole branch (root first).
func RecoveryOf(branch []core.Entry) Recovery {
	in := Recovery{Evidence: ScanEvidence(branch), Activity: BranchActivity(branch)}
	lo := LastBoundary(branch) + 1
	for i := len(branch) - 1; i >= lo; i-- {
		if branch[i].Kind == core.KindUserMessage {
			if t := strings.TrimSpace(textOf(branch[i].Payload)); t != "" {
				in.Goal = t
				break
			}
		}
	}
	in.Assistant = AssistantTexts(branch[lo:])
	if prev, err := Project(branch, ProjectOptions{}); err == nil {
		in.Earlier = &prev.Checkpoint
	}
	return in
}

// AssistantTexts returns the newest non-blank assistant messages of es
// (oldest first), trimmed, newest first, at most RecentAssistant.
func AssistantTexts(es []core.Entry) []string {
	var out []string
	for i := len(es) - 1; i >= 0 && len(out) < recentAssistant; i-- {
		if es[i].Kind == core.KindAssistantMessage {
			if t := strings.TrimSpace(textOf(es[i].Payload)); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// ReconstructFrom is Reconstruct from what it reads of the record.
func ReconstructFrom(in Recovery, gitStatus string, b Bookkeeping) (Reconstructed, error) {
	var r Reconstructed
	if b.Reason == "" {
		b.Reason = ReasonPhaseBoundary
	}
	r.Evidence = in.Evidence
	files, err := ParseGitStatus(gitStatus)
	if err != nil {
		r.Warnings = append(r.Warnings, err.Error())
	}
	r.GitFiles = files
	goal, assistant := in.Goal, in.Assistant
	if goal == "" && len(assistant) == 0 && r.Evidence.Empty() && len(files) == 0 {
		return r, core.E(core.CodeSummary, "checkpoint: nothing to reconstruct since the last boundary", ErrEmptySummary)
	}

	var s strings.Builder
	if in.Running {
		s.WriteString("Reconstructed by Bridge from the record while the harness ran (it cannot fork the session, and Bridge does not write into the live conversation); the agent did not write this summary.")
	} else {
		s.WriteString("Reconstructed by Bridge from the record after the harness process ended; the agent did not write this summary.")
	}
	if in.Earlier != nil {
		fmt.Fprintf(&s, "\n\nEarlier checkpoint: %s", clip(in.Earlier.Summary))
	}
	if goal != "" {
		fmt.Fprintf(&s, "\n\nLast request from the user: %s", clip(goal))
	}
	if len(assistant) > 0 {
		s.WriteString("\n\nRecent assistant messages, oldest first:")
		for i := len(assistant) - 1; i >= 0; i-- {
			fmt.Fprintf(&s, "\n- %s", oneLine(clip(assistant[i])))
		}
	}
	if len(files) > 0 {
		fmt.Fprintf(&s, "\n\nThe repository has %d changed or untracked files.", len(files))
	}

	fileList := append([]string(nil), r.Evidence.Files...)
	for _, f := range files {
		fileList = append(fileList, f.Path)
	}
	var open []string
	act := in.Activity
	for _, id := range act.ToolsInFlight {
		open = append(open, fmt.Sprintf("Tool call %s was still running when the process ended; check its effect.", id))
	}
	for _, id := range act.ApprovalsPending {
		open = append(open, fmt.Sprintf("Approval %s was never answered; ask again if still needed.", id))
	}
	if goal != "" {
		open = append(open, "Confirm whether the last request is finished: "+oneLine(clip(goal)))
	}

	r.Checkpoint = Checkpoint{
		SchemaVersion:        SchemaVersion,
		Summary:              s.String(),
		Decisions:            nonNil(Dedupe(r.Evidence.Decisions)),
		FilesTouched:         nonNil(Dedupe(fileList)),
		OpenWork:             Dedupe(open),
		SourceAgent:          b.SourceAgent,
		FirstRetainedEntryID: b.FirstRetainedEntryID,
		TokensBefore:         b.TokensBefore,
		Reason:               b.Reason,
		Provenance:           ProvenanceReconstructed,
	}
	return r, nil
}

// RecoveryAudit is the `compaction.recovery_worker.completed` audit record
// of a reconstruction.
func RecoveryAudit(sessionID string, r Reconstructed) core.AuditRecord {
	return core.AuditRecord{Source: auditSource, Kind: AuditRecoveryCompleted, Entity: sessionID,
		Body: core.Payload(struct {
			DecisionCount int        `json:"decisionCount"`
			FileCount     int        `json:"fileCount"`
			GitFiles      int        `json:"gitFiles"`
			Provenance    Provenance `json:"provenance"`
		}{len(r.Checkpoint.Decisions), len(r.Checkpoint.FilesTouched), len(r.GitFiles), ProvenanceReconstructed})}
}

// clip cuts s to maxQuote bytes on a rune boundary.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxQuote {
		return s
	}
	cut := maxQuote
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
