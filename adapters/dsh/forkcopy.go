package dsh

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// logName is the name of a session's log in its folder (DSH's default
// zstd encoding; a home configured for plain JSONL is not copied).
const logName = "session.jsonl.zstd"

// sessionIDShape is what a DSH session id looks like: one path segment.
var sessionIDShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// findLog returns the path of a session's log under a DSH home
// ($DSH_HOME/sessions/<project>/<id>/session.jsonl.zstd) and its project
// folder's name.
func findLog(home, id string) (path, project string, err error) {
	if !sessionIDShape.MatchString(id) {
		return "", "", core.Errorf(core.CodeInvalid, "dsh: session id %s is not one path segment", core.Quote(id))
	}
	root := filepath.Join(home, "sessions")
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", "", core.E(core.CodeNotFound, "dsh: the DSH home's sessions folder "+core.Quote(root), err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name(), id, logName)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			return p, e.Name(), nil
		}
	}
	return "", "", core.Errorf(core.CodeNotFound, "dsh: no %s of session %s under %s", logName, id, core.Quote(root))
}

// copyLog copies the whole zstd frames of the log at src to dst (through
// a temporary file renamed into place, owner-only) and returns the seq of
// the last turn/end they hold (-1: none). A frame DSH is still writing
// (cut short) and what follows it are left out.
func copyLog(ctx context.Context, src, dst string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return -1, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".copy-*")
	if err != nil {
		return -1, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 256<<10)
	ended, frames := int64(-1), 0
	err = streamLog(ctx, src, nil, logVisitor{
		header: func(Header) {},
		event: func(ev Event) error {
			if ev.Type == "turn/end" {
				ended = ev.First()
			}
			return nil
		},
		bad:   func(BadLine) error { return nil },
		frame: func(raw []byte) error { _, err := w.Write(raw); return err },
	}, &frames)
	var fe *FrameError
	if err != nil && !(core.ErrorCode(err) == core.CodeCorrupt && errors.As(err, &fe)) {
		return -1, err
	}
	if frames == 0 {
		return -1, core.Errorf(core.CodeHarness, "dsh: the log %s holds no whole zstd frame", core.Quote(src))
	}
	if err := w.Flush(); err != nil {
		return -1, err
	}
	if err := tmp.Close(); err != nil {
		return -1, err
	}
	return ended, os.Rename(tmp.Name(), dst)
}

// logWait bounds how long a fork waits for the live session's log to hold
// the turn the live session last completed (DSH writes it moments after
// the turn ends).
const logWait = 3 * time.Second

// copyThrough copies the live session's log into the fork server's home
// until the copy holds turn/end `want` (any completed turn when want < 0)
// and returns the seq of the last turn/end copied.
func copyThrough(ctx context.Context, src, dst string, want int64) (int64, error) {
	deadline := time.Now().Add(logWait)
	for {
		got, err := copyLog(ctx, src, dst)
		if err != nil {
			return -1, err
		}
		if got >= 0 && got >= want {
			return got, nil
		}
		if time.Now().After(deadline) {
			return -1, core.Errorf(core.CodeUnavailable, "dsh: after %s the log %s holds turns through seq %d, not the completed turn at seq %d",
				logWait, core.Quote(src), got, want)
		}
		select {
		case <-ctx.Done():
			return -1, core.E(core.CodeCancelled, "dsh: fork cancelled", ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
