package dsh

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/zstd"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
)

// logName is the name of a session's log in its folder (DSH's default
// zstd encoding; a home configured for plain JSONL is not copied).
const logName = "session.jsonl.zstd"

// sessionIDShape is what a DSH session id looks like: one path segment
// (compiled on first use: package initialization stays small).
var sessionIDShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`) })

// findLog returns the path of a session's log under a DSH home
// ($DSH_HOME/sessions/<project>/<id>/session.jsonl.zstd) and its project
// folder's name.
func findLog(home, id string) (path, project string, err error) {
	if !sessionIDShape().MatchString(id) {
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

// logCopy is the fork server's copy of one live session's log. Each fork
// extends it with the whole zstd frames the live log gained since the
// last one: the frames copied before are copied again as bytes, and only
// the new ones are decoded, to find the last completed turn they hold.
type logCopy struct {
	mu       sync.Mutex
	src, dst string
	id       os.FileInfo // the source when last copied (a log DSH replaced is copied whole)
	off      int64       // bytes of whole frames copied
	ended    int64       // seq of the last turn/end in them (-1: none)
	carry    []byte      // the start of a line cut at the last frame's end

	// fromHome and toHome are the two DSH homes: the images the log's
	// messages refer to are copied from one's attachment store to the
	// other's (once each).
	fromHome, toHome string
	images           map[string]bool
}

// newLogCopy is the copy of the log at src to dst (nothing copied yet),
// with the images it refers to from the DSH home fromHome to toHome.
func newLogCopy(src, dst, fromHome, toHome string) *logCopy {
	return &logCopy{src: src, dst: dst, ended: -1, fromHome: fromHome, toHome: toHome, images: map[string]bool{}}
}

// update copies the frames src gained since the last update (src whole
// when it was replaced or shrank) to dst, through a temporary file
// renamed into place (owner-only), and returns the seq of the last
// turn/end copied (-1: none). A frame DSH is still writing (cut short) and
// what follows it are left for the next update.
func (c *logCopy) update(ctx context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := os.Stat(c.src)
	if err != nil {
		return -1, core.E(core.CodeNotFound, "dsh: the session log "+core.Quote(c.src), err)
	}
	if c.id == nil || !os.SameFile(c.id, fi) || fi.Size() < c.off {
		c.off, c.ended, c.carry = 0, -1, nil
	} else if fi.Size() == c.off {
		return c.ended, nil
	}
	f, err := inputfile.Open(ctx, c.src, "dsh session log", 0)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Dir(c.dst), 0o700); err != nil {
		return -1, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.dst), ".copy-*")
	if err != nil {
		return -1, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 256<<10)
	br := bufio.NewReaderSize(f, 256<<10)
	if _, err := io.CopyN(w, br, c.off); err != nil {
		return -1, core.E(core.CodeHarness, "dsh: copy the session log "+core.Quote(c.src), err)
	}
	off, ended, carry := c.off, c.ended, c.carry
	var frame, text []byte
	for {
		if _, err := br.Peek(1); err != nil {
			break
		}
		var skippable bool
		var ferr error
		frame, skippable, ferr = readFrame(br, frame[:0])
		if ferr != nil {
			break // a frame DSH is writing: copied with the next update
		}
		if !skippable {
			if text, err = zstd.Decode(text[:0], frame, inputfile.MaxLineBytes); err != nil {
				if off == 0 {
					return -1, core.E(core.CodeCorrupt, "dsh: the session log "+core.Quote(c.src), err)
				}
				break
			}
			carry = turnEnds(append(carry, text...), &ended)
			if err := c.copyImages(ctx, text); err != nil {
				return -1, err
			}
		}
		if _, err := w.Write(frame); err != nil {
			return -1, err
		}
		off += int64(len(frame))
	}
	if off == 0 {
		return -1, core.Errorf(core.CodeHarness, "dsh: the log %s holds no whole zstd frame", core.Quote(c.src))
	}
	if err := w.Flush(); err != nil {
		return -1, err
	}
	if err := tmp.Close(); err != nil {
		return -1, err
	}
	if err := os.Rename(tmp.Name(), c.dst); err != nil {
		return -1, err
	}
	c.id, c.off, c.ended, c.carry = fi, off, ended, append(c.carry[:0], carry...)
	return ended, nil
}

// imageRef is how a message refers to an image in DSH's attachment store.
var imageRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"attachmentId":"sha256:([a-f0-9]{64})"`) })

// maxImageBytes bounds one image copied (DSH's own limit is 3.5 MiB).
const maxImageBytes = 64 << 20

// copyImages copies the images text refers to that the fork server's
// attachment store lacks ($DSH_HOME/attachments/v1/objects/<2>/<sha256>,
// content-addressed), owner-only. One the user's store lacks is left out:
// the fork then fails as DSH would.
func (c *logCopy) copyImages(ctx context.Context, text []byte) error {
	if c.fromHome == "" || !bytes.Contains(text, []byte(`"sha256:`)) {
		return nil
	}
	for _, m := range imageRef().FindAllSubmatch(text, -1) {
		sum := string(m[1])
		if c.images[sum] {
			continue
		}
		rel := filepath.Join("attachments", "v1", "objects", sum[:2], sum)
		b, err := inputfile.ReadFile(ctx, filepath.Join(c.fromHome, rel), "DSH image", maxImageBytes)
		if core.ErrorCode(err) == core.CodeNotFound {
			continue
		}
		if err != nil {
			return err
		}
		to := filepath.Join(c.toHome, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			return err
		}
		c.images[sum] = true
	}
	return nil
}

// turnEndMark is in every turn/end line (DSH writes "type" first).
var turnEndMark = []byte(`"type":"turn/end"`)

// turnEnds sets *ended to the seq of the last turn/end among the whole
// lines of text and returns what follows its last newline.
func turnEnds(text []byte, ended *int64) []byte {
	for {
		nl := bytes.IndexByte(text, '\n')
		if nl < 0 {
			return text
		}
		line := text[:nl]
		text = text[nl+1:]
		if !bytes.Contains(line, turnEndMark) {
			continue
		}
		var ev Event
		if json.Unmarshal(line, &ev) == nil && ev.Type == "turn/end" && ev.First() >= 0 {
			*ended = ev.First()
		}
	}
}

// logWait bounds how long a fork waits for the live session's log to hold
// the turn the live session last completed (DSH writes it moments after
// the turn ends).
const logWait = 3 * time.Second

// through updates the copy until it holds turn/end `want` (any completed
// turn when want < 0) and returns the seq of the last turn/end copied.
func (c *logCopy) through(ctx context.Context, want int64) (int64, error) {
	deadline := time.Now().Add(logWait)
	for {
		got, err := c.update(ctx)
		if err != nil {
			return -1, err
		}
		if got >= 0 && got >= want {
			return got, nil
		}
		if time.Now().After(deadline) {
			return -1, core.Errorf(core.CodeUnavailable, "dsh: after %s the log %s holds turns through seq %d, not the completed turn at seq %d",
				logWait, core.Quote(c.src), got, want)
		}
		select {
		case <-ctx.Done():
			return -1, core.E(core.CodeCancelled, "dsh: fork cancelled", ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
