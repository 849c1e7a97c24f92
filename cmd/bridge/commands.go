package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bridge-dev/bridge/core/service"
	"github.com/bridge-dev/bridge/schema"
)

// flags returns a flag set for a subcommand with --json, which also takes
// the global --data-dir (so `bridge serve --data-dir D` works as
// `bridge --data-dir D serve` does).
func (a *app) flags(name string) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("bridge "+name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.StringVar(&a.dataDirFlag, "data-dir", a.dataDirFlag, "data directory")
	return fs, fs.Bool("json", false, "machine-readable output")
}

// parse parses args, allowing flags after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func (a *app) version(args []string) error {
	fs, asJSON := a.flags("version")
	if _, err := parse(fs, args); err != nil {
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
	if _, err := parse(fs, args); err != nil {
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
	harness := fs.String("harness", "", "probe only this harness")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	return a.withEnv(ctx, func(e *env) error {
		rep, err := e.svc.BridgeDoctor(ctx, schema.DoctorParams{Harness: *harness})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, rep)
		}
		fmt.Fprintf(a.stdout, "data directory: %s\ndatabase: %s (schema version %d)\n", rep.DataDir, rep.Database, rep.SchemaVersion)
		for _, ad := range rep.Adapters {
			status := "ok"
			if !ad.OK {
				status = "missing " + strings.Join(ad.Missing, ", ")
			}
			fmt.Fprintf(a.stdout, "\n%s: %s\n", ad.Harness, status)
			if ad.Binary != "" || ad.Version != "" {
				fmt.Fprintf(a.stdout, "  program: %s\n", strings.TrimSpace(ad.Binary+" "+ad.Version))
			}
			for _, c := range ad.Capabilities {
				mark := "yes"
				if !c.Available {
					mark = "no "
				}
				kind := "optional"
				if c.Required {
					kind = "required"
				}
				line := fmt.Sprintf("  %s %-26s %s", mark, c.Name, kind)
				if c.Detail != "" {
					line += "  (" + c.Detail + ")"
				}
				fmt.Fprintln(a.stdout, line)
			}
		}
		return nil
	})
}

func (a *app) sessions(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("sessions")
	all := fs.Bool("all", false, "include archived sessions")
	if _, err := parse(fs, args); err != nil {
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
		tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tHARNESS\tTITLE\tUPDATED\tRESTORED")
		for _, s := range list.Items {
			title := s.Title
			if s.Archived {
				title += " (archived)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.SessionID, s.Harness, title, s.UpdatedAt.Local().Format(time.DateTime), s.RestoreMode)
		}
		return tw.Flush()
	})
}

func (a *app) history(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("history")
	before := fs.Int64("before", 0, "entries with seq below this (0: from the head)")
	max := fs.Int("max", 60, "user/assistant messages per page")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one SESSION"}
	}
	return a.withEnv(ctx, func(e *env) error {
		p := schema.SessionHistoryParams{SessionID: pos[0], MaxMessages: *max}
		if *before != 0 {
			p.BeforeSeq = before
		}
		res, err := e.svc.SessionHistory(ctx, p)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, res)
		}
		entries, more := res.Entries, res.HasMore
		for _, en := range entries {
			fmt.Fprintf(a.stdout, "%6d  %s  %-20s %s\n", en.Seq, en.CreatedAt.Local().Format(time.TimeOnly), en.Kind, brief(en.Payload))
		}
		if more && len(entries) > 0 {
			fmt.Fprintf(a.stdout, "… older entries: bridge history %s --before %d\n", pos[0], entries[0].Seq)
		}
		return nil
	})
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
	harness := fs.String("harness", "", "claude-code, codex, opencode, …")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *harness == "" {
		return usageError{"want --harness H and exactly one PATH"}
	}
	return a.withEnv(ctx, func(e *env) error {
		if !*asJSON && stderrIsTerminal(a.stderr) {
			ctx = service.WithProgress(ctx, func(done, total int64, msg string) {
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
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one SESSION"}
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
	if len(args) == 0 || (args[0] != "preview" && args[0] != "execute") {
		return usageError{"want `migrate preview SESSION` or `migrate execute PREVIEW`"}
	}
	sub := args[0]
	fs, asJSON := a.flags("migrate " + sub)
	if sub == "preview" {
		harness := fs.String("harness", "", "target harness (default: the source's)")
		preset := fs.String("preset", "", "target preset")
		model := fs.String("model", "", "target model")
		effort := fs.String("effort", "", "target reasoning effort")
		budget := fs.Int("budget", 0, "summary character budget (default 2400)")
		lang := fs.String("lang", "", "en or zh (default: by the source's language)")
		pos, err := parse(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageError{"want exactly one SESSION"}
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
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one PREVIEW id"}
	}
	return a.withEnv(ctx, func(e *env) error {
		out, err := e.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: pos[0], Path: *path, Continue: *cont,
			Inject: schema.InjectMode(*inject), GoalRounds: *rounds})
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
