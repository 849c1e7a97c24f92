package dshtest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
)

// Headless runs one task with DSH's own automation mode, `dsh --profile
// headless TASK` (a fresh persisted session run to quiescence; the last
// assistant text on stdout), in cwd, with the same program, environment
// and DSH_HOME as the web server, and returns its output. It fails for an
// external server (BRIDGE_DSH_URL), whose program and home are not known.
func (r *Real) Headless(ctx context.Context, cwd, task string) (string, error) {
	if r.external {
		return "", errors.New("dsh headless: BRIDGE_DSH_URL names an external server; its program is not known here")
	}
	cmd := exec.CommandContext(ctx, r.node, r.bin, "--profile", "headless", task)
	cmd.Env = r.env
	cmd.Dir = cwd
	procutil.SetProcessGroup(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("dsh --profile headless: %w\n%s", err, out)
	}
	return string(out), nil
}
