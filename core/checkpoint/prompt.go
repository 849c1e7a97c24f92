package checkpoint

import (
	"errors"
	"fmt"
	"strings"
)

// PromptOptions shapes RequestPrompt.
type PromptOptions struct {
	// Focus is an optional note from the user on what to emphasise.
	Focus string
	// Instructions are the user's standing additions to every request
	// (configuration), after the shape.
	Instructions string
	// MaxDecisions and MaxFiles cap how many evidence items are listed
	// (0 means 100 and 200). Items left out are still appended by
	// FillGaps; the prompt says how many were left out.
	MaxDecisions, MaxFiles int
}

// RequestPrompt is the text sent into the live session to ask it for a
// checkpoint. It asks for meaning only (summary, decisions, filesTouched,
// openWork, as one JSON object) and lists the decisions and files the record
// already proves, so the first answer accounts for them. It never asks the
// model for bookkeeping fields; Bridge fills those itself.
func RequestPrompt(reason Reason, ev Evidence, opt PromptOptions) string {
	maxD, maxF := opt.MaxDecisions, opt.MaxFiles
	if maxD <= 0 {
		maxD = 100
	}
	if maxF <= 0 {
		maxF = 200
	}
	var b strings.Builder
	b.WriteString("Bridge checkpoint request")
	if reason != "" {
		fmt.Fprintf(&b, " (%s)", strings.ReplaceAll(string(reason), "_", " "))
	}
	b.WriteString(".\n\n")
	b.WriteString("Write a checkpoint of this session so that a fresh process, or another model, can continue the work from it " +
		"without this conversation. Do not run tools or change files for this; answer from what you know.\n\n")
	b.WriteString("Reply with exactly one JSON object and nothing else, in this shape:\n\n")
	b.WriteString("{\n" +
		"  \"summary\": \"what the task is, what has been done and where things stand, in a few sentences\",\n" +
		"  \"decisions\": [\"each durable decision or convention, with its reason\"],\n" +
		"  \"filesTouched\": [\"each file path created, changed or relied on\"],\n" +
		"  \"openWork\": [\"each thing still to do, next step first\"]\n" +
		"}\n\n")
	b.WriteString("Keep exact numbers, names and paths verbatim. Leave out values that were superseded. " +
		"Use empty arrays where there is nothing to list.\n")
	if in := strings.TrimSpace(opt.Instructions); in != "" {
		fmt.Fprintf(&b, "\n%s\n", in)
	}
	if f := strings.TrimSpace(opt.Focus); f != "" {
		fmt.Fprintf(&b, "\nFocus on: %s\n", f)
	}
	if len(ev.Decisions) > 0 {
		b.WriteString("\nThe record shows these decisions were made. Include each one in \"decisions\" (you may word it better, but do not drop it):\n")
		writeList(&b, ev.Decisions, maxD, "decisions")
	}
	if len(ev.Files) > 0 {
		b.WriteString("\nThe record shows these files were changed or created. Include each one in \"filesTouched\":\n")
		writeList(&b, ev.Files, maxF, "files")
	}
	return b.String()
}

func writeList(b *strings.Builder, items []string, max int, what string) {
	for i, s := range items {
		if i == max {
			fmt.Fprintf(b, "- … and %d more %s, which Bridge will add itself\n", len(items)-max, what)
			return
		}
		fmt.Fprintf(b, "- %s\n", oneLine(s))
	}
}

// oneLine folds line breaks so each listed item stays on one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// RepairPrompt is the second and last attempt, sent in the same session
// after a reply that ParseReply refused. It names what was wrong (from the
// error's sentinel) and repeats the expected shape.
func RepairPrompt(problem error) string {
	var what string
	switch {
	case errors.Is(problem, ErrNoObject):
		what = "it contained no JSON object"
	case errors.Is(problem, ErrUnbalanced):
		what = "its JSON object was cut off (a brace was never closed)"
	case errors.Is(problem, ErrEmptySummary):
		what = "its \"summary\" was missing or empty"
	case errors.Is(problem, ErrBadJSON):
		what = "its JSON object was malformed"
		if problem != nil {
			what += " (" + problem.Error() + ")"
		}
	case problem != nil:
		what = problem.Error()
	default:
		what = "it could not be read"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Your checkpoint reply could not be used: %s.\n\n", what)
	b.WriteString("Reply again with exactly one valid JSON object and nothing else, with a non-empty \"summary\" string " +
		"and \"decisions\", \"filesTouched\" and \"openWork\" as arrays of strings:\n\n" +
		"{\"summary\": \"...\", \"decisions\": [], \"filesTouched\": [], \"openWork\": []}\n")
	return b.String()
}
