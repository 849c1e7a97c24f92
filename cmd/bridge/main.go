// Command bridge is the Bridge sidecar and its command line.
//
// An editor extension or WebUI server launches `bridge` (or `bridge serve`)
// and speaks JSON-RPC 2.0 to it over stdio in LSP framing; `bridge web`
// serves the WebUI and the same contract over WebSocket. People use the
// other subcommands: version, doctor, sessions, history, import, search, export, fork, checkpoint,
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
	"runtime/debug"
	"strings"
	"syscall"
)

// version is the Bridge version; release builds set it with -ldflags.
var version = "0.1.0-dev"

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	// Installing the handlers takes a fifth of a millisecond (the runtime
	// starts a thread for them): it runs beside the rest of the start,
	// which waits for it (awaitSignals) before a command does anything and
	// before serve answers initialize. The collector's settings are made
	// there too: no collection runs that early.
	ready := make(chan struct{})
	signalsReady = ready
	go func() {
		tuneGC()
		handleSignals(cancel, ready)
	}()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// signalsReady is closed once SIGINT and SIGTERM are handled; nil when Main
// runs without main (tests).
var signalsReady <-chan struct{}

// handleSignals makes the first SIGINT or SIGTERM end the process's
// context: `bridge serve` then takes the path a shutdown request takes
// (whatever the service does when it closes happens) and exits 0; a
// second one ends the process at once.
func handleSignals(cancel context.CancelFunc, ready chan<- struct{}) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	close(ready)
	<-sigs
	cancel()
	<-sigs
	fmt.Fprintln(os.Stderr, "bridge: stopped without finishing (second signal)")
	os.Exit(130)
}

// awaitSignals returns once the signal handlers are in place.
func awaitSignals() {
	if signalsReady != nil {
		<-signalsReady
	}
}

// Main runs the command line and returns the process exit status: 0
// success, 1 failure, 2 usage error (130 when interrupted).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, wantJSON: hasJSONFlag(args)}
	rest, err := a.globalFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText())
			return 0
		}
		return a.report("", err)
	}
	if len(rest) == 0 {
		if isTerminal(stdin) {
			fmt.Fprint(stderr, usageText())
			return 2
		}
		return a.serve(ctx, nil)
	}
	cmd, cargs := rest[0], rest[1:]
	if cmd != "serve" {
		awaitSignals() // serve waits before it answers initialize
	}
	switch cmd {
	case "serve":
		return a.serve(ctx, cargs)
	case "web":
		return a.web(ctx, cargs)
	case "acp":
		return a.acpAgent(ctx, cargs)
	case "help":
		return a.help(ctx, cargs)
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
	case "usage":
		err = a.usageCmd(ctx, cargs)
	case "diff":
		err = a.diffCmd(ctx, cargs)
	case "export":
		err = a.exportCmd(ctx, cargs)
	case "fork":
		err = a.forkCmd(ctx, cargs)
	case "checkpoint":
		err = a.checkpoint(ctx, cargs)
	case "migrate":
		if len(cargs) > 0 && (cargs[0] == "preview" || cargs[0] == "execute") {
			cmd += " " + cargs[0]
		}
		err = a.migrate(ctx, cargs)
	case "store":
		if len(cargs) > 0 && cargs[0] == "copy" {
			cmd += " copy"
		}
		err = a.storeCmd(ctx, cargs)
	case "schema":
		err = a.schema(cargs)
	default:
		return a.report("", usageError{fmt.Sprintf("unknown command %q", cmd)})
	}
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return 0
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "bridge %s: interrupted\n", cmd)
		return 130
	}
	return a.report(cmd, err)
}

// help is `bridge help [COMMAND]`: the same text as `bridge --help` or
// `bridge COMMAND --help`, on stdout.
func (a *app) help(ctx context.Context, topic []string) int {
	if len(topic) == 0 {
		fmt.Fprint(a.stdout, usageText())
		return 0
	}
	name := topic[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	if (name == "migrate" || name == "store") && len(topic) > 1 {
		name += " " + topic[1]
	}
	c, ok := commandNamed(name)
	switch {
	case name == "migrate" && len(topic) == 1:
		fmt.Fprint(a.stdout, migrateHelp())
		return 0
	case name == "store" && len(topic) == 1:
		name = "store copy"
		c, ok = commandNamed(name)
	case !ok:
		return a.report("help", usageError{fmt.Sprintf("unknown command %q", strings.Join(topic, " "))})
	case len(strings.Fields(name)) < len(topic):
		return a.report("help", usageError{fmt.Sprintf("unexpected argument %q", topic[len(strings.Fields(name))])})
	case c.name == "help":
		fmt.Fprint(a.stdout, helpText(c, nil))
		return 0
	}
	return Main(ctx, append(strings.Fields(name), "--help"), a.stdin, a.stdout, a.stderr)
}

// migrateHelp is the help of the migrate group.
func migrateHelp() string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, n := range []string{"migrate preview", "migrate execute"} {
		c, _ := commandNamed(n)
		fmt.Fprintf(&b, "  bridge %-24s %s\n", c.name+" "+c.args, c.summary)
	}
	b.WriteString("\nRun 'bridge help migrate preview' or 'bridge help migrate execute' for their flags.\n")
	return b.String()
}

// hasJSONFlag reports whether args ask for --json (so that even a usage
// error is reported as JSON).
func hasJSONFlag(args []string) bool {
	on := false
	for _, a := range args {
		switch a {
		case "--":
			return on
		case "--json", "-json", "--json=true", "-json=true":
			on = true
		case "--json=false", "-json=false":
			on = false
		}
	}
	return on
}

// flagMessage rewords the flag package's errors with the double dash the
// help shows.
func flagMessage(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + rest
	}
	msg = strings.Replace(msg, "flag -", "flag --", 1)
	msg = strings.Replace(msg, "argument: -", "argument: --", 1)
	return msg
}

// tuneGC makes the collector run a quarter as often as Go's default
// (GOGC=400) unless the environment sets GOGC: a sidecar's live heap is
// small, and each collection puts a pause of its own into the path of a
// harness event or an approval on a 2-core machine (BENCHMARKS.md, "Tool
// approvals"). A soft memory limit of 1 GiB, unless GOMEMLIMIT says
// otherwise, brings collections back when the heap does grow (a large
// import).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}
