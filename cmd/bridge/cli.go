package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/bridge-dev/bridge/core"
)

// command describes one subcommand for help and argument checks.
type command struct {
	// name is the command as typed: "history", "migrate preview".
	name string
	// args names the positional arguments ("SESSION"); nargs is how many
	// there must be (at least, when variadic).
	args     string
	nargs    int
	variadic bool
	// summary is the one line of the command list; about may add more.
	summary string
	about   string
}

// commands lists every subcommand, in the order help shows them.
var commands = []command{
	{name: "serve", summary: "JSON-RPC 2.0 over stdio in LSP framing (the default when stdin is not a terminal)",
		about: "What an editor extension or a WebUI server launches: it reads LSP-framed JSON-RPC messages\non stdin and answers on stdout until exit. SIGINT or SIGTERM stops it as a shutdown request does."},
	{name: "web", summary: "serve the WebUI, and JSON-RPC over WebSocket at /rpc, on a loopback address",
		about: "Prints \"Bridge WebUI: URL\" first: open URL (it carries the access token) in a browser. Every tab\nshares one service and one database. Only loopback addresses are served; the token is random per\nstart unless BRIDGE_WEB_TOKEN sets it. Each connection's send queue holds up to 16384 messages\n(BRIDGE_WEB_QUEUE_MESSAGES) or 32 MiB: a tab that stops reading delays no other, and one that falls\nfurther behind or leaves a message unread for 30 s is disconnected (the WebUI reconnects and\nreloads). SIGINT or SIGTERM stops it."},
	{name: "acp", summary: "be an Agent Client Protocol agent on stdio (--harness, --preset, --model), for editors and acpx",
		about: "What Zed, JetBrains IDEs, Neovim plugins and acpx launch as an ACP agent: newline-delimited\nJSON-RPC on stdin/stdout, sessions on the harness --harness names (default claude-code), recorded in\nthe same database as serve and web. Closing stdin (or SIGINT/SIGTERM) ends it after the same\nshutdown checkpoints serve writes. See docs/editors.md."},
	{name: "version", summary: "print the version"},
	{name: "doctor", summary: "what each adapter can do, the data directory and the database"},
	{name: "sessions", summary: "list recorded sessions"},
	{name: "history", args: "SESSION", nargs: 1, summary: "page a session's record (oldest of the page first)",
		about: "Pages a session's active branch, oldest of the page first: the newest page, or backwards from a seq\n(--before SEQ), forwards from a seq towards the head (--after SEQ; 0 is the first entry), or the page\naround one entry (--around ENTRY, its line marked >; bridge search prints this command for each hit).\nOne of the three at most. --max bounds a page by user and assistant messages. The last lines give the\ncommand for the older page and, on --after and --around pages, the newer one."},
	{name: "import", args: "[PATH]", variadic: true, summary: "bring a transcript (--harness H PATH; --harness bridge for an export) or, with --discover, every harness's new transcripts into the record",
		about: "With --discover, Bridge looks where each configured harness keeps its transcripts (Claude Code:\n$CLAUDE_CONFIG_DIR or ~/.claude/projects; Codex: $CODEX_HOME or ~/.codex/sessions; OpenCode: its database\nopencode.db in $XDG_DATA_HOME/opencode or ~/.local/share/opencode; DeepSeek Harness: $DSH_HOME or\n~/.dsh/sessions), imports the new and changed ones (a grown transcript adds only its new entries) and\nprints a summary per harness. Entries keep the times the harness wrote them. It only reads the\nharnesses' files."},
	{name: "search", args: "QUERY...", nargs: 1, variadic: true, summary: "search every session's text (--harness, --cwd, --session, --since, --until)",
		about: "Prints each hit in three lines: the entry's time, harness and kind and its session's title; the\nmatching text with the matched words in [brackets]; and the command that opens the hit, the page of\nits session around it: bridge history SESSION --around ENTRY. Words match entries holding all of\nthem; \"quotes\", AND, OR, NOT, NEAR(...) and word* are SQLite FTS5 query syntax. --json prints the\nhits as session/search answers them."},
	{name: "diff", args: "SESSION", nargs: 1, summary: "what a session changed in its repository since it started (--since CHECKPOINT, --stat)"},
	{name: "usage", args: "[SESSION]", variadic: true, summary: "what turns cost: tokens and cost by session, harness, model or day (--group-by, --since, --until)"},
	{name: "export", args: "SESSION", nargs: 1, summary: "render a session as Markdown or lossless JSON (--format, --output)"},
	{name: "fork", args: "SESSION", nargs: 1, summary: "start a new session on any harness from a point of this one (--entry, --harness)"},
	{name: "checkpoint", args: "SESSION", nargs: 1, summary: "write a Bridge checkpoint of a session now"},
	{name: "migrate preview", args: "SESSION", nargs: 1, summary: "write a five-part handoff for another harness, preset or model"},
	{name: "migrate execute", args: "PREVIEW", nargs: 1, summary: "start the target session from a (possibly edited) preview"},
	{name: "store copy", summary: "copy every session from one record to another (--from, --to: a PostgreSQL URL or a SQLite path)",
		about: "Copies losslessly (ids, sequence numbers, times, audit records, images: what export --format json\nkeeps), each session in one transaction. A session already copied is skipped, one grown since gets\nwhat it lacks: a second run copies nothing new and an interrupted one resumes. --from and --to are each\na postgres:// URL, a data directory (its bridge.db) or a SQLite database file (created when missing)."},
	{name: "schema", summary: "print the JSON Schema bundle of the client contract"},
	{name: "help", args: "[COMMAND]", summary: "show help for bridge or for one command"},
}

// commandNamed returns the description of a subcommand.
func commandNamed(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageText is `bridge help`.
func usageText() string {
	var b strings.Builder
	b.WriteString("bridge: a sidecar that drives coding-agent harnesses and keeps their record.\n\n")
	b.WriteString("Usage:\n  bridge [global flags] COMMAND [ARGUMENTS] [flags]\n  bridge --version\n  bridge help [COMMAND]\n\nCommands:\n")
	for _, c := range commands {
		left := strings.TrimSpace(c.name + " " + c.args)
		fmt.Fprintf(&b, "  %-27s %s\n", left, c.summary)
	}
	fmt.Fprintf(&b, "\nHarnesses (--harness): %s.\n", harnessList())
	b.WriteString(`
Global flags, before or after the command (bridge --json sessions = bridge sessions --json):
  --json                       machine-readable output (errors too)
  --data-dir DIR               the data directory
  --store URL                  the record: postgres://USER@HOST/DB, or sqlite (the default)
A command's own flags go after its name ('bridge help COMMAND' lists them).
The data directory is --data-dir, else $BRIDGE_DATA_DIR, else $XDG_DATA_HOME/bridge,
else ~/.local/share/bridge. The record is --store, else $BRIDGE_STORE, else config.json's
"store", else the SQLite database in the data directory.
Exit status: 0 success, 1 failure, 2 usage error.
`)
	return b.String()
}

// helpText is the help of one subcommand: usage line, description, flags.
func helpText(c command, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: bridge %s [flags]\n\n", strings.TrimSpace(c.name+" "+c.args))
	about := c.summary
	if c.about != "" {
		about = c.about
	}
	b.WriteString(strings.ToUpper(about[:1]) + strings.TrimSuffix(about[1:], ".") + ".\n")
	if fs == nil {
		return b.String()
	}
	b.WriteString("\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		_, usage := flag.UnquoteUsage(f)
		value := valueName(f.Name)
		if value == "" {
			value = strings.ToUpper(f.Name)
		}
		if b, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool && b.IsBoolFlag() {
			value = ""
		}
		left := "--" + f.Name
		if value != "" {
			left += " " + value
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.Name != "data-dir" && f.Name != "store" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(&b, "  %-28s %s\n", left, usage)
	})
	return b.String()
}

// globalFlags parses the flags given before the command: --data-dir and
// --json (which every command also takes after its name), --version and
// --help. It returns the command and its arguments; --version alone is the
// version command. An unknown flag before the command is a usage error that
// says which flags may stand there.
func (a *app) globalFlags(args []string) (rest []string, err error) {
	global := flag.NewFlagSet("bridge", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	global.Usage = func() {}
	global.StringVar(&a.dataDirFlag, "data-dir", "", "data directory")
	global.StringVar(&a.storeFlag, "store", "", storeFlagHelp)
	global.BoolVar(&a.wantJSON, "json", a.wantJSON, "machine-readable output (errors too)")
	showVersion := global.Bool("version", false, "print the version")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		msg := flagMessage(err)
		if strings.HasPrefix(msg, "unknown flag --") {
			msg += " before the command: only --data-dir DIR, --store URL, --json, --version and --help may come first; a command's own flags go after its name"
		}
		return nil, usageError{msg}
	}
	rest = global.Args()
	if *showVersion {
		if len(rest) > 0 {
			return nil, usageError{"--version takes no command"}
		}
		rest = []string{"version"}
	}
	return rest, nil
}

// valueName names the value of a flag in help, where the flag's own name in
// capitals would not do ("" otherwise). A switch, not a map: nothing to
// build before main.
func valueName(flag string) string {
	switch flag {
	case "data-dir":
		return "DIR"
	case "store":
		return "URL"
	case "before", "after":
		return "SEQ"
	case "around":
		return "ENTRY"
	case "max", "goal-rounds", "limit":
		return "N"
	case "since", "until":
		return "TIME"
	case "cwd":
		return "DIR"
	case "budget":
		return "CHARS"
	case "max-content-length":
		return "BYTES"
	case "file":
		return "PATH"
	case "log-level":
		return "LEVEL"
	}
	return ""
}

// errHelpShown ends a command whose --help was printed.
var errHelpShown = errors.New("help shown")

// harnessFlag checks a --harness value against the harnesses this binary
// has (and extra names, such as import's "bridge"): an unknown one is a
// usage error naming them all.
func harnessFlag(v string, extra ...string) error {
	if v == "" {
		return nil
	}
	known := append(harnessNames(), extra...)
	if slices.Contains(known, v) {
		return nil
	}
	return usageError{fmt.Sprintf("--harness %q is not a harness Bridge has (want one of: %s)", v, strings.Join(known, ", "))}
}

// harnessList names every harness (and extra names) for a flag's help.
func harnessList(extra ...string) string { return strings.Join(append(harnessNames(), extra...), ", ") }

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// flagOfField names the command-line flag behind each request field the
// service may refuse, so that the message names what the person typed.
func flagOfField(field string) (string, bool) {
	switch field {
	case "goalRounds":
		return "--goal-rounds", true
	case "summaryCharBudget":
		return "--budget", true
	case "maxMessages":
		return "--max", true
	case "beforeSeq":
		return "--before", true
	case "afterSeq":
		return "--after", true
	case "around":
		return "--around", true
	case "entryId":
		return "--entry", true
	case "lang", "inject", "reason", "limit", "format", "model", "effort", "harness", "cwd", "cursor", "until", "since":
		return "--" + field, true
	}
	return "", false
}

// asFlagError turns the service's refusal of a field that a flag sets into
// a usage error naming the flag (in place of the field's name, or before
// a message that does not name it); other errors are returned as they are.
func asFlagError(err error) error {
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeInvalid {
		return err
	}
	field := ce.Field
	flag, ok := flagOfField(field)
	if !ok {
		return err
	}
	words := regexp.MustCompile(`\b` + regexp.QuoteMeta(field) + `\b`)
	msg := userMessage(ce)
	if !words.MatchString(msg) {
		// "entry "e_1" belongs to session s_2": say which flag gave it.
		return usageError{flag + ": " + msg}
	}
	return usageError{words.ReplaceAllLiteralString(msg, flag)}
}

// report prints a command's failure once: a line on stderr, or with --json
// a JSON object on stdout. It returns the exit status.
func (a *app) report(cmd string, err error) int {
	if q := (quietError{}); errors.As(err, &q) {
		return 1
	}
	err = asFlagError(err)
	var ue usageError
	isUsage := errors.As(err, &ue)
	code, status := string(core.ErrorCode(err)), 1
	if isUsage {
		code, status = "usage", 2
	}
	msg := userMessage(err)
	if a.wantJSON {
		type failure struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Usage   string `json:"usage,omitempty"`
		}
		out := struct {
			Error failure `json:"error"`
		}{failure{Code: code, Message: msg}}
		if isUsage {
			out.Error.Usage = helpCommand(cmd)
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(a.stdout, "%s\n", b)
		return status
	}
	prefix := "bridge"
	if cmd != "" {
		prefix += " " + cmd
	}
	fmt.Fprintf(a.stderr, "%s: %s\n", prefix, msg)
	if isUsage {
		fmt.Fprintf(a.stderr, "Run '%s' for usage.\n", helpCommand(cmd))
	}
	return status
}

// helpCommand is the command that shows cmd's help.
func helpCommand(cmd string) string {
	if cmd == "" || cmd == "help" {
		return "bridge help"
	}
	return "bridge help " + cmd
}

// userMessage is what a person reads: the error without the sentinel
// causes ("core: not found") that only code compares against.
func userMessage(err error) string {
	msg := err.Error()
	for _, s := range []error{core.ErrNotFound, core.ErrCancelled, core.ErrUnsupported} {
		msg = strings.ReplaceAll(msg, ": "+s.Error(), "")
	}
	return wireMethodPrefix().ReplaceAllString(msg, "")
}

// wireMethodPrefix is a JSON-RPC method name prefixed to a message
// ("session/search: "), which means nothing at the command line.
var wireMethodPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(session|migration|bridge)/[A-Za-z.]+: `) })

// isTerminal reports whether r is a terminal (not merely a character
// device: /dev/null is one too).
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stderrIsTerminal says whether progress can be drawn.
func stderrIsTerminal(w io.Writer) bool { return w == io.Writer(os.Stderr) && isTerminal(os.Stderr) }
