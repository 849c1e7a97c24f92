package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// searchCmd is `bridge search QUERY`: ranked hits across every session.
func (a *app) searchCmd(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("search")
	harness := fs.String("harness", "", "only sessions of this harness ("+harnessList()+")")
	cwd := fs.String("cwd", "", "only sessions in this working directory")
	session := fs.String("session", "", "only this session")
	since := fs.String("since", "", "only entries recorded at or after this time (RFC 3339 or YYYY-MM-DD)")
	until := fs.String("until", "", "only entries recorded before this time (RFC 3339 or YYYY-MM-DD)")
	limit := fs.Int("limit", 20, "hits per page (at most 200)")
	cursor := fs.String("cursor", "", "continue from a previous page's next cursor")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"want a QUERY"}
	}
	if strings.TrimSpace(strings.Join(pos, "")) == "" {
		return usageError{"want a QUERY (the one given is empty)"}
	}
	if err := harnessFlag(*harness); err != nil {
		return err
	}
	if *limit < 1 || *limit > 200 {
		return usageError{"--limit must be between 1 and 200"}
	}
	q := core.SearchQuery{Query: strings.Join(pos, " "), Harness: *harness, Cwd: *cwd, SessionID: *session,
		Limit: *limit, Cursor: *cursor}
	if q.Since, err = parseTime("--since", *since); err != nil {
		return err
	}
	if q.Until, err = parseTime("--until", *until); err != nil {
		return err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return usageError{fmt.Sprintf("--until %s is not after --since %s: no entry can match", *until, *since)}
	}
	if q.Cwd != "" {
		// Sessions record their folder as an absolute path: --cwd . is
		// the folder the command runs in.
		if q.Cwd, err = filepath.Abs(q.Cwd); err != nil {
			return usageError{fmt.Sprintf("--cwd %q: %v", *cwd, err)}
		}
	}
	return a.withEnv(ctx, func(e *env) error {
		page, err := e.svc.Search(ctx, q)
		if err != nil {
			return err
		}
		if len(page.Hits) == 0 && q.SessionID != "" && q.Cursor == "" {
			// A mistyped --session finds nothing: say so, rather than
			// "no matches".
			if _, err := e.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: q.SessionID, MaxMessages: 1}); core.ErrorCode(err) == core.CodeNotFound {
				return err
			}
		}
		if *asJSON {
			return printJSON(a.stdout, service.SearchResult(page))
		}
		if len(page.Hits) == 0 {
			fmt.Fprintln(a.stdout, "no matches")
			return nil
		}
		for _, h := range page.Hits {
			printHit(a.stdout, h)
		}
		if page.NextCursor != "" {
			fmt.Fprintf(a.stdout, "… more hits: the same search with --cursor %s\n", page.NextCursor)
		}
		return nil
	})
}

// printHit prints one search hit in three lines: when, where and what
// (the entry's time, harness and kind, and its session's title), the
// snippet, and the command that opens the hit, which names the session and
// the entry, with the entry's seq after a shell comment sign, so that the
// whole line can be pasted to a shell:
//
//	2026-11-30 04:17  codex  tool.started  run echo
//	    exec_command {"cmd":"echo [hello]-from-tool"}
//	    bridge history s_01M8… --around e_01M8…  # seq 2
func printHit(w io.Writer, h core.SearchHit) {
	title := h.SessionTitle
	if title == "" {
		title = "(untitled)"
	}
	fmt.Fprintf(w, "%s  %s  %s  %s\n", h.CreatedAt.Local().Format("2006-01-02 15:04"), oneLine(h.Harness, 30),
		oneLine(string(h.Kind), 30), oneLine(title, 60))
	fmt.Fprintf(w, "    %s\n", markedSnippet(h.Snippet, h.Highlights))
	fmt.Fprintf(w, "    bridge history %s --around %s  # seq %d\n", shellWord(h.SessionID), shellWord(h.EntryID), h.Seq)
}

// shellWord is an id as one shell word: as it is when it holds only
// letters, digits and _.-:, else single-quoted (ids Bridge makes are
// plain; an imported session's ids might not be).
func shellWord(s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_.-:", c)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(noControls(s), "'", `'\''`) + "'"
}

// noControls shows s's control characters (a terminal's escape sequences
// among them) as spaces.
func noControls(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// markedSnippet renders a snippet on one line with its matches in [brackets];
// control characters of the entry's text are shown as spaces.
func markedSnippet(s string, marks [][2]int) string {
	var b strings.Builder
	r := []rune(s)
	next := 0
	for i, c := range r {
		if next < len(marks) && marks[next][0] == i {
			b.WriteByte('[')
		}
		if unicode.IsControl(c) {
			c = ' '
		}
		b.WriteRune(c)
		if next < len(marks) && marks[next][1] == i+1 {
			b.WriteByte(']')
			next++
		}
	}
	return b.String()
}

// oneLine shortens s to n code points on one line; control characters
// (a terminal's escape sequences among them) are shown as spaces.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(noControls(s)), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// parseTime reads a flag's time: RFC 3339, or a date (midnight UTC).
func parseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageError{fmt.Sprintf("%s %q is not a time (RFC 3339, or YYYY-MM-DD)", flag, v)}
}

// exportCmd is `bridge export SESSION [--format markdown|json] [--output FILE]`.
func (a *app) exportCmd(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("export")
	format := fs.String("format", "markdown", "markdown (readable) or json (lossless; bridge import --harness bridge reads it)")
	output := fs.String("output", "", "write to this new file instead of stdout")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one SESSION"}
	}
	if *format != "markdown" && *format != "json" {
		return usageError{fmt.Sprintf("--format %q is not markdown or json", *format)}
	}
	return a.withEnv(ctx, func(e *env) error {
		content, err := e.svc.Export(ctx, pos[0], *format)
		if err != nil {
			return err
		}
		if *output != "" {
			// O_EXCL: an export never replaces a file that exists.
			f, err := os.OpenFile(*output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, os.ErrExist) {
				return core.Errorf(core.CodeConflict, "%s already exists (an export never replaces a file; name a new one)", *output)
			}
			if err != nil {
				return core.E(core.CodeInvalid, "cannot create "+*output, err)
			}
			_, err = f.WriteString(content)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(*output) // a partial export is no export
				return fmt.Errorf("write %s: %w", *output, err)
			}
			if *asJSON {
				return printJSON(a.stdout, struct {
					SessionID string `json:"sessionId"`
					Format    string `json:"format"`
					Path      string `json:"path"`
					Bytes     int    `json:"bytes"`
				}{pos[0], *format, *output, len(content)})
			}
			what := "Markdown"
			if *format == "json" {
				what = "lossless JSON (bridge import --harness bridge reads it)"
			}
			_, err = fmt.Fprintf(a.stdout, "Wrote session %s as %s to %s (%d bytes).\n", pos[0], what, *output, len(content))
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, schema.SessionExportResult{Format: schema.ExportFormat(*format), Content: content})
		}
		_, err = fmt.Fprint(a.stdout, content)
		return err
	})
}

// forkCmd is `bridge fork SESSION [--entry E] [--harness H] [--preset P]
// [--model M] [--effort E] [--cwd DIR]`.
func (a *app) forkCmd(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("fork")
	entry := fs.String("entry", "", "fork at this entry (default: the head)")
	harness := fs.String("harness", "", "harness of the new session (default: the source's; "+harnessList()+")")
	preset := fs.String("preset", "", "preset of the new session")
	model := fs.String("model", "", "model of the new session")
	effort := fs.String("effort", "", "reasoning effort of the new session")
	cwd := fs.String("cwd", "", "working directory of the new session (default: the source's)")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one SESSION"}
	}
	if err := harnessFlag(*harness); err != nil {
		return err
	}
	return a.withEnv(ctx, func(e *env) error {
		res, err := e.svc.SessionFork(ctx, schema.SessionForkParams{SessionID: pos[0], EntryID: *entry, Cwd: *cwd,
			Target: schema.MigrationTarget{Harness: *harness, Preset: *preset, Model: *model, Effort: *effort}})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, res)
		}
		fmt.Fprintf(a.stdout, "forked %s at %s into %s session %s (%d entries carried)\n", res.Origin.SessionID,
			res.Origin.EntryID, res.Harness, res.SessionID, res.ProjectedEntries)
		return nil
	})
}

// discover is `bridge import --discover [--harness H]`: a progress line on
// a terminal, then one summary line per harness.
func (a *app) discover(ctx context.Context, harness string, asJSON bool) error {
	return a.withEnv(ctx, func(e *env) error {
		tty := !asJSON && stderrIsTerminal(a.stderr)
		if tty {
			ctx = peer.WithProgress(ctx, func(done, total int64, msg string) {
				fmt.Fprintf(a.stderr, "\r\033[Kdiscover: %d/%d %s", done, total, oneLine(msg, 60))
			})
		}
		out, err := e.svc.SessionImport(ctx, schema.SessionImportParams{Discover: true, Harness: harness})
		if tty {
			fmt.Fprint(a.stderr, "\r\033[K")
		}
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(a.stdout, out)
		}
		for _, d := range out.Discovered {
			fmt.Fprintf(a.stdout, "%-12s %d transcripts: %d imported, %d unchanged, %d failed; %d entries added\n",
				d.Harness, d.Files, d.Imported, d.Unchanged, len(d.Failed), d.Entries)
			for _, f := range d.Failed {
				fmt.Fprintf(a.stdout, "  failed %s: %s\n", f.Path, oneLine(f.Error, 200))
			}
			if d.Files == 0 {
				fmt.Fprintf(a.stdout, "  (looked in %s)\n", strings.Join(d.Roots, ", "))
			}
		}
		return nil
	})
}
