package claudecode

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// Steer writes another user line on stream-json input while a turn runs.
// Claude Code takes it into the running turn when it reads it before the
// turn's last model request (the model sees it after the tool results it
// waits for); read later, it becomes a turn of its own right after. The
// process runs with --replay-user-messages, so each line Bridge writes is
// replayed when Claude Code takes it: a steer replayed before the turn's
// result line joined the turn; while a steer is not replayed yet, a result
// line does not end the caller's Prompt, which waits for the result of the
// turn that answers the steer. Either way Prompt returns once the harness
// has dealt with every steer, and the next prompt's result is its own.
func (l *live) Steer(ctx context.Context, content []core.Content) error {
	line, err := userLine(content)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return core.E(core.CodeCancelled, "claude-code: steer abandoned", err)
	}
	l.mu.Lock()
	running := l.turn != nil
	if running {
		l.echoes.expect(line, true)
	}
	l.mu.Unlock()
	if !running {
		return core.Errorf(core.CodeInvalid, "claude-code: no turn is running to steer")
	}
	if err := l.writeJSON(line); err != nil {
		l.echoes.forget(line)
		return err
	}
	return nil
}

var _ core.Steerer = (*live)(nil)

// maxEchoes bounds the lines awaiting their replay (a line Claude Code
// never replays, such as one written as the process ended, is forgotten
// with the oldest).
const maxEchoes = 64

// echoes are the user lines Bridge wrote that Claude Code has not replayed
// yet, by their content's JSON text. Their replays are not recorded (the
// service records prompts itself).
type echoes struct {
	mu     sync.Mutex
	lines  []echo
	steers int // steers among lines
}

type echo struct {
	key   string
	steer bool
}

// echoKey is the JSON text of a user line's message content, as Claude
// Code replays it.
func echoKey(content any) string {
	b, _ := json.Marshal(content)
	return string(b)
}

// lineContent is the message content of a line built by userLine.
func lineContent(line userMessageLine) any { return line.Message.Content }

// expect notes a line about to be written.
func (e *echoes) expect(line userMessageLine, steer bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.lines) >= maxEchoes {
		if e.lines[0].steer {
			e.steers--
		}
		e.lines = e.lines[1:]
	}
	e.lines = append(e.lines, echo{key: echoKey(lineContent(line)), steer: steer})
	if steer {
		e.steers++
	}
}

// forget undoes expect for a line that could not be written.
func (e *echoes) forget(line userMessageLine) {
	e.remove(echoKey(lineContent(line)))
}

// take reports whether m replays a line Bridge wrote, and forgets it.
func (e *echoes) take(m *streamMsg) bool {
	if m.Message == nil {
		return false
	}
	var content any
	if json.Unmarshal(m.Message.Content, &content) != nil {
		return false
	}
	return e.remove(echoKey(content))
}

func (e *echoes) remove(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.lines {
		if x.key == key {
			if x.steer {
				e.steers--
			}
			e.lines = append(e.lines[:i], e.lines[i+1:]...)
			return true
		}
	}
	return false
}

// steersPending counts the steers Claude Code has not taken yet.
func (e *echoes) steersPending() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.steers
}
