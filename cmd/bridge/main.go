// Command bridge is the Bridge sidecar and its command line.
//
// An editor extension or WebUI server launches `bridge` (or `bridge serve`)
// and speaks JSON-RPC 2.0 to it over stdio in LSP framing. People use the
// other subcommands: version, doctor, sessions, history, import, search, checkpoint,
// migrate, schema. Every subcommand takes --json for machine-readable output
// and the global --data-dir.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bridge-dev/bridge/core"
)

// version is the Bridge version; release builds set it with -ldflags.
var version = "0.1.0-dev"

const usage = `bridge: a sidecar that drives coding-agent harnesses and keeps their record.

Usage:
  bridge [--data-dir DIR] <command> [flags]

Commands:
  serve                      JSON-RPC 2.0 over stdio, LSP framing (the default when stdin is not a terminal)
  version                    print the version
  doctor [--harness H]       what each adapter can do, the data directory and the database
  sessions [--all]           list recorded sessions
  history SESSION            page a session's record (--before SEQ, --max N)
  import --harness H PATH    bring a harness transcript into the record
  search QUERY               search every session's text (--harness, --cwd, --session, --since, --until, --limit)
  checkpoint SESSION         write a Bridge checkpoint now (--reason R)
  migrate preview SESSION    write a five-part handoff for another harness/preset/model
  migrate execute PREVIEW    start the target session from a (possibly edited) preview
  schema                     print the JSON Schema bundle of the client contract

Every command takes --json. The data directory is --data-dir, else $BRIDGE_DATA_DIR,
else $XDG_DATA_HOME/bridge, else ~/.local/share/bridge.
`

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	// The first SIGINT or SIGTERM ends ctx: `bridge serve` then takes the
	// path a shutdown request takes (whatever the service does when it
	// closes happens) and exits 0; a second one ends the process at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "bridge: stopped without finishing (second signal)")
		os.Exit(130)
	}()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("bridge", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.Usage = func() { fmt.Fprint(stderr, usage) }
	dataDir := global.String("data-dir", "", "data directory")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := global.Args()
	a := &app{dataDirFlag: *dataDir, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(rest) == 0 {
		if isTerminal(stdin) {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return a.serve(ctx, nil)
	}
	cmd, cargs := rest[0], rest[1:]
	var err error
	switch cmd {
	case "serve":
		return a.serve(ctx, cargs)
	case "version":
		err = a.version(cargs)
	case "doctor":
		err = a.doctor(ctx, cargs)
	case "sessions":
		err = a.sessions(ctx, cargs)
	case "history":
		err = a.history(ctx, cargs)
	case "import":
		err = a.importCmd(ctx, cargs)
	case "search":
		err = a.searchCmd(ctx, cargs)
	case "checkpoint":
		err = a.checkpoint(ctx, cargs)
	case "migrate":
		err = a.migrate(ctx, cargs)
	case "schema":
		err = a.schema(cargs)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "bridge: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "bridge %s: %v\n", cmd, err)
			return 2
		}
		fmt.Fprintf(stderr, "bridge %s: %v\n", cmd, err)
		if c := core.ErrorCode(err); c != core.CodeInternal {
			fmt.Fprintf(stderr, "(code: %s)\n", c)
		}
		return 1
	}
	return 0
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// isTerminal reports whether r is a character device (a terminal).
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
