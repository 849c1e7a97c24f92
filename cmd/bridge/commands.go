package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// flags returns a flag set for a subcommand with the global flags --json
// and --data-dir, which may come before the command or after it (so
// `bridge sessions --json` works as `bridge --json sessions` does). It prints nothing itself: parse
// prints --help, and Main reports errors once.
func (a *app) flags(name string) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("bridge "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	asJSON := fs.Bool("json", a.wantJSON, "machine-readable output (errors too)")
	fs.StringVar(&a.dataDirFlag, "data-dir", a.dataDirFlag, "data directory")
	fs.StringVar(&a.storeFlag, "store", a.storeFlag, storeFlagHelp)
	return fs, asJSON
}

// parse parses args, allowing flags after positional arguments. It prints
// the command's help for --help (returning errHelpShown), and checks the
// number of positional arguments the command takes.
func (a *app) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	name := strings.TrimPrefix(fs.Name(), "bridge ")
	c, known := commandNamed(name)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(a.stdout, helpText(c, fs))
				return nil, errHelpShown
			}
			return nil, usageError{flagMessage(err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if known {
		switch {
		case len(pos) > c.nargs && !c.variadic:
			return nil, usageError{fmt.Sprintf("unexpected argument %q", pos[c.nargs])}
		case len(pos) < c.nargs:
			return nil, usageError{"missing " + strings.TrimSuffix(strings.Fields(c.args)[len(pos)], "...")}
		}
	}
	return pos, nil
}

func (a *app) version(args []string) error {
	fs, asJSON := a.flags("version")
	if _, err := a.parse(fs, args); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(a.stdout, map[string]string{"name": "bridge", "version": version, "go": runtime.Version()})
	}
	fmt.Fprintf(a.stdout, "bridge %s (%s)\n", version, runtime.Version())
	return nil
}

func (a *app) schema(args []string) error {
	fs, _ := a.flags("schema")
	if _, err := a.parse(fs, args); err != nil {
		return err
	}
	return schema.WriteBundle(a.stdout)
}

// withEnv opens the data directory, runs fn and closes it.
func (a *app) withEnv(ctx context.Context, fn func(e *env) error) error {
	e, err := a.open(ctx, openOptions{})
	if err != nil {
		return err
	}
	defer e.Close(context.WithoutCancel(ctx))
	return fn(e)
}

func (a *app) doctor(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("doctor")
	harness := fs.String("harness", "", "probe only this harness ("+harnessList()+")")
	verbose := fs.Bool("verbose", false, "list every capability of each adapter, with the reasons")
	if _, err := a.parse(fs, args); err != nil {
		return err
	}
	if err := harnessFlag(*harness); err != nil {
		return err
	}
	return a.withEnv(ctx, func(e *env) error {
		rep, err := e.svc.BridgeDoctor(ctx, schema.DoctorParams{Harness: *harness})
		if err != nil {
			return err
		}
		failed := doctorFailures(rep, e.cfg, *harness)
		if *asJSON {
			if err := printJSON(a.stdout, rep); err != nil {
				return err
			}
			if len(failed) > 0 {
				return quietError{fmt.Errorf("%s", strings.Join(failed, "; "))}
			}
			return nil
		}
		if *harness != "" && len(rep.Adapters) == 1 && !rep.Adapters[0].Installed && !*verbose {
			// One line: the program is not there.
			return core.Errorf(core.CodeUnavailable, "%s", failed[0])
		}
		writeDoctor(a.stdout, rep, *verbose)
		if len(failed) > 0 {
			return core.Errorf(core.CodeUnavailable, "%s", strings.Join(failed, "; "))
		}
		return nil
	})
}

// doctorFailures says, for each adapter that cannot work and that the
// configuration enables explicitly or --harness names, why.
func doctorFailures(rep schema.DoctorResult, cfg Config, named string) []string {
	var out []string
	for _, ad := range rep.Adapters {
		hc, configured := cfg.Harnesses[ad.Harness]
		if ad.OK || !(ad.Harness == named || (configured && !hc.Disabled)) {
			continue
		}
		if !ad.Installed {
			out = append(out, fmt.Sprintf("%s is not installed: %s", ad.Harness, whyMissing(ad)))
			continue
		}
		out = append(out, fmt.Sprintf("%s cannot work: missing %s (%s)", ad.Harness, strings.Join(ad.Missing, ", "), whyMissing(ad)))
	}
	return out
}

// whyMissing is the detail of the first required capability that is not
// available.
func whyMissing(ad schema.AdapterReport) string {
	for _, c := range ad.Capabilities {
		if c.Need == schema.NeedRequired && !c.Available && c.Detail != "" {
			return c.Detail
		}
	}
	return "no detail"
}

// writeDoctor prints the report: one line per installed adapter, the
// adapters whose program is not installed on one line, and with verbose
// every capability with its need and reason.
func writeDoctor(w io.Writer, rep schema.DoctorResult, verbose bool) {
	fmt.Fprintf(w, "data directory: %s\ndatabase: %s (schema version %d)\n", rep.DataDir, rep.Database, rep.SchemaVersion)
	var absent []string
	for _, ad := range rep.Adapters {
		if !ad.Installed && !verbose {
			absent = append(absent, ad.Harness)
			continue
		}
		status := "ok"
		switch {
		case !ad.Installed:
			status = "not installed"
		case !ad.OK:
			status = "cannot work: missing " + strings.Join(ad.Missing, ", ")
		}
		program := strings.TrimSpace(ad.Version + " " + paren(ad.Binary))
		fmt.Fprintf(w, "%-12s %s", ad.Harness, status)
		if program != "" {
			fmt.Fprintf(w, "  %s", program)
		}
		fmt.Fprintln(w)
		if !verbose {
			continue
		}
		for _, c := range ad.Capabilities {
			mark := "yes"
			if !c.Available {
				mark = "no "
			}
			line := fmt.Sprintf("  %s %-26s %-15s %s", mark, c.Name, strings.ReplaceAll(string(c.Need), "_", " "), c.Reason)
			if c.Detail != "" {
				line += " [" + c.Detail + "]"
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(absent) > 0 {
		fmt.Fprintf(w, "not installed: %s (bridge doctor --verbose says why)\n", strings.Join(absent, ", "))
	}
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// quietError fails a command whose output already says why (doctor
// --json): the exit status is 1 and nothing more is printed.
type quietError struct{ err error }

func (q quietError) Error() string { return q.err.Error() }
func (q quietError) Unwrap() error { return q.err }

func (a *app) sessions(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("sessions")
	all := fs.Bool("all", false, "include archived sessions")
	if _, err := a.parse(fs, args); err != nil {
		return err
	}
	return a.withEnv(ctx, func(e *env) error {
		list := schema.SessionListResult{Items: []schema.SessionListItem{}}
		cursor := ""
		for {
			page, err := e.svc.SessionList(ctx, schema.SessionListParams{Cursor: cursor, IncludeArchived: *all})
			if err != nil {
				return err
			}
			list.Items = append(list.Items, page.Items...)
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if *asJSON {
			return printJSON(a.stdout, list)
		}
		if len(list.Items) == 0 {
			hidden := ""
			if !*all {
				hidden = " (archived ones are listed with --all)"
			}
			_, err := fmt.Fprintf(a.stdout, "No sessions in %s%s. Start one with `bridge web` (the fake harness needs nothing installed), or import transcripts: bridge import --discover\n", e.dir, hidden)
			return err
		}
		tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tHARNESS\tTITLE\tSTATUS\tUPDATED\tRESTORED")
		for _, s := range list.Items {
			title := noControls(s.Title) // a tab or an escape of the title would break the table or the terminal
			if s.Archived {
				title += " (archived)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.SessionID, s.Harness, title, s.Status,
				s.UpdatedAt.Local().Format(time.DateTime), s.RestoreMode)
		}
		return tw.Flush()
	})
}

func (a *app) history(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("history")
	before := fs.Int64("before", 0, "page backwards: entries with seq below this (0: from the head)")
	after := fs.Int64("after", 0, "page forwards: entries with seq above this, towards the head (0: from the first entry)")
	around := fs.String("around", "", "the page around this entry id (marked >): about half the messages up to it, the rest after")
	max := fs.Int("max", 60, "user/assistant messages per page")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "before" || f.Name == "after" || f.Name == "around" {
			given = append(given, "--"+f.Name)
		}
	})
	switch {
	case len(given) > 1:
		return usageError{fmt.Sprintf("%s and %s cannot be given together: a page is read backwards (--before), forwards (--after) or around an entry (--around)", given[0], given[1])}
	case *max < 1:
		// (0 would be the wire's "the default", which --max already is.)
		return usageError{"--max must be at least 1 (user and assistant messages per page; 60 when not given)"}
	case *before < 0:
		return usageError{"--before must not be negative"}
	case *after < 0:
		return usageError{"--after must not be negative"}
	case slices.Contains(given, "--around") && strings.TrimSpace(*around) == "":
		return usageError{"--around needs an entry id (bridge search prints it with each hit; history --json gives every entry's)"}
	}
	return a.withEnv(ctx, func(e *env) error {
		p := schema.SessionHistoryParams{SessionID: pos[0], MaxMessages: *max, Around: *around}
		if *before != 0 {
			p.BeforeSeq = before
		}
		if slices.Contains(given, "--after") {
			p.AfterSeq = after
		}
		res, err := e.svc.SessionHistory(ctx, p)
		if err != nil {
			return offBranchHint(ctx, e, pos[0], *around, err)
		}
		if *asJSON {
			return printJSON(a.stdout, res)
		}
		entries := res.Entries
		for _, en := range entries {
			mark := " "
			if en.ID == *around {
				mark = ">"
			}
			fmt.Fprintf(a.stdout, "%6d%s %s  %-20s %s\n", en.Seq, mark, en.CreatedAt.Local().Format(time.DateTime), en.Kind, describe(en.Kind, en.Payload))
		}
		if len(entries) == 0 {
			// Say so, rather than print nothing at all.
			switch {
			case *before != 0:
				fmt.Fprintf(a.stdout, "no entries before seq %d\n", *before)
			case slices.Contains(given, "--after"):
				fmt.Fprintf(a.stdout, "no entries after seq %d (the head is there or before it)\n", *after)
			default:
				fmt.Fprintln(a.stdout, "no entries")
			}
			return nil
		}
		if res.HasMore {
			fmt.Fprintf(a.stdout, "… older entries: bridge history %s --before %d\n", pos[0], entries[0].Seq)
		}
		if res.HasNewer != nil && *res.HasNewer {
			fmt.Fprintf(a.stdout, "… newer entries: bridge history %s --after %d\n", pos[0], entries[len(entries)-1].Seq)
		}
		return nil
	})
}

// offBranchHint adds, to the refusal of an --around entry of the session
// that is not on its active branch (a search finds it; the session was
// rewound past it), how to go on from it.
func offBranchHint(ctx context.Context, e *env, sessionID, entryID string, err error) error {
	var ce *core.Error
	if entryID == "" || !errors.As(err, &ce) || ce.Code != core.CodeInvalid || ce.Field != "around" {
		return err
	}
	if en, gerr := e.db.GetEntry(ctx, entryID); gerr != nil || en.SessionID != sessionID {
		return err
	}
	return usageError{fmt.Sprintf("--around: %s; to go on from it: bridge fork %s --entry %s", userMessage(ce), sessionID, entryID)}
}

// brief shortens a payload to one line.
func brief(p []byte) string {
	s := strings.Join(strings.Fields(string(p)), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}

func (a *app) importCmd(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("import")
	harness := fs.String("harness", "", "the transcript's harness ("+harnessList("bridge")+"; bridge: a Bridge export); with --discover, only this harness")
	discover := fs.Bool("discover", false, "find and import the new or changed transcripts of Claude Code, Codex, OpenCode and DeepSeek Harness")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if err := harnessFlag(*harness, "bridge"); err != nil {
		return err
	}
	if *discover {
		if len(pos) > 0 {
			return usageError{fmt.Sprintf("--discover takes no PATH (got %q)", pos[0])}
		}
		return a.discover(ctx, *harness, *asJSON)
	}
	switch {
	case len(pos) == 0:
		return usageError{"missing PATH (or --discover)"}
	case len(pos) > 1:
		return usageError{fmt.Sprintf("unexpected argument %q", pos[1])}
	case *harness == "":
		return usageError{"missing --harness (" + harnessList("bridge") + ")"}
	}
	if path := os.Getenv("BRIDGE_CPUPROFILE"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return usageError{fmt.Sprintf("BRIDGE_CPUPROFILE: %v", err)}
		}
		defer stop()
	}
	return a.withEnv(ctx, func(e *env) error {
		if !*asJSON && stderrIsTerminal(a.stderr) {
			ctx = peer.WithProgress(ctx, func(done, total int64, msg string) {
				if total > 0 {
					fmt.Fprintf(a.stderr, "\r%s: %d%%   ", msg, done*100/total)
				} else {
					fmt.Fprintf(a.stderr, "\r%s: %d   ", msg, done)
				}
			})
		}
		out, err := e.svc.SessionImport(ctx, schema.SessionImportParams{Harness: *harness, Path: pos[0]})
		if stderrIsTerminal(a.stderr) && !*asJSON {
			fmt.Fprint(a.stderr, "\r\033[K")
		}
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, out)
		}
		fmt.Fprintf(a.stdout, "session %s: %d entries added, %d context compactions\n", out.SessionID, out.Entries, out.ContextCompacted)
		return nil
	})
}

func (a *app) checkpoint(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("checkpoint")
	reason := fs.String("reason", "manual", "checkpoint reason")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	return a.withEnv(ctx, func(e *env) error {
		out, err := e.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: pos[0], Reason: schema.CheckpointReason(*reason)})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, out)
		}
		fmt.Fprintf(a.stdout, "checkpoint %s saved (%s, provenance %s)\n", out.EntryID, out.Reason, out.Provenance)
		return nil
	})
}

func (a *app) migrate(ctx context.Context, args []string) error {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help") {
		fmt.Fprint(a.stdout, migrateHelp())
		return errHelpShown
	}
	if len(args) == 0 || (args[0] != "preview" && args[0] != "execute") {
		return usageError{"want `migrate preview SESSION` or `migrate execute PREVIEW`"}
	}
	sub := args[0]
	fs, asJSON := a.flags("migrate " + sub)
	if sub == "preview" {
		harness := fs.String("harness", "", "target harness (default: the source's; "+harnessList()+")")
		preset := fs.String("preset", "", "target preset")
		model := fs.String("model", "", "target model")
		effort := fs.String("effort", "", "target reasoning effort")
		budget := fs.Int("budget", 0, "summary character budget (default 2400)")
		lang := fs.String("lang", "", "en or zh (default: by the source's language)")
		pos, err := a.parse(fs, args[1:])
		if err != nil {
			return err
		}
		if err := harnessFlag(*harness); err != nil {
			return err
		}
		return a.withEnv(ctx, func(e *env) error {
			p, err := e.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: pos[0],
				Target: schema.MigrationTarget{Harness: *harness, Preset: *preset, Model: *model, Effort: *effort}, SummaryCharBudget: *budget, Lang: *lang})
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(a.stdout, p)
			}
			fmt.Fprintf(a.stdout, "─── Handoff preview %s (review numbers and paths) ───\n%s\n───\n", p.PreviewID, p.Summary)
			for _, w := range p.Warnings {
				fmt.Fprintln(a.stdout, "⚠ "+w)
			}
			fmt.Fprintf(a.stdout, "Edit %s if needed, then: bridge migrate execute %s\n", p.Path, p.PreviewID)
			return nil
		})
	}
	path := fs.String("file", "", "the edited preview file (default: the preview's own)")
	cont := fs.Bool("continue", false, "restate and continue instead of restate and wait")
	inject := fs.String("inject", "", "goal, prompt or both (default: by the target's capabilities)")
	rounds := fs.Int("goal-rounds", 0, "goal rounds (default 1)")
	overBudget := fs.Bool("allow-over-budget", false, "send a handoff that is over its summary budget as it is")
	pos, err := a.parse(fs, args[1:])
	if err != nil {
		return err
	}
	return a.withEnv(ctx, func(e *env) error {
		out, err := e.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: pos[0], Path: *path, Continue: *cont,
			Inject: schema.InjectMode(*inject), GoalRounds: *rounds, AllowOverBudget: *overBudget})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, out)
		}
		fmt.Fprintf(a.stdout, "target session %s (model transferred: %v, goal created/paused: %v/%v, kickoff sent: %v)\n",
			out.TargetSessionID, out.ModelTransferred, out.GoalCreated, out.GoalPaused, out.KickoffSent)
		for _, w := range out.Warnings {
			fmt.Fprintln(a.stdout, "⚠ "+w)
		}
		return nil
	})
}
