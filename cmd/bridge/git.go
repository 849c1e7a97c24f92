package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// gitTimeout bounds one git command Bridge runs.
const gitTimeout = 60 * time.Second

// runGit runs git (the fixed path gitBinary found) in dir with args, the
// way Bridge always runs it: no pager, no hooks, no filesystem monitor, no
// untracked cache, no optional locks, no prompts, no replace objects, stdin
// closed, bounded by gitTimeout. It returns stdout; a failure carries
// git's stderr. It never runs a command that changes the repository's
// configuration.
func runGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	bin, err := gitBinary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	full := append([]string{"--no-pager",
		"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
		"-c", "core.untrackedCache=false", "-C", dir}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat",
		"GIT_NO_REPLACE_OBJECTS=1")
	cmd.Stdin = nil
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000]
		}
		if ctx.Err() != nil {
			return out, core.E(core.CodeHarness, fmt.Sprintf("git %s in %s: no answer within %s", args[0], core.Quote(dir), gitTimeout), ctx.Err())
		}
		return out, &gitError{args: args, dir: dir, stderr: msg, err: err}
	}
	return out, nil
}

// gitError is a git command that failed, with its stderr.
type gitError struct {
	args   []string
	dir    string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s in %s: %v: %s", e.args[0], core.Quote(e.dir), e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

// Stderr is what git wrote on stderr.
func (e *gitError) Stderr() string { return e.stderr }
