package fake

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Op names one scripted step of the fake model.
type Op string

// The directives a prompt may hold, one per line (see the package doc).
const (
	OpSay     Op = "say"     // say <text>: assistant.message with text
	OpJSON    Op = "json"    // json <text>: assistant.message with the literal text
	OpTool    Op = "tool"    // tool <name> [arg]: tool.started + tool.completed
	OpAsk     Op = "ask"     // ask <name> [arg]: asks the approver, then as tool or a refusal
	OpStream  Op = "stream"  // stream <N>: N assistant.message entries at once
	OpCompact Op = "compact" // compact auto|manual [pre post]: context.compacted
	OpUsage   Op = "usage"   // usage <used>: sets the context gauge reading
	OpSleep   Op = "sleep"   // sleep <ms>: waits (Cancel ends the turn)
	OpHang    Op = "hang"    // hang: waits until Cancel, Close or the prompt's ctx
	OpCrash   Op = "crash"   // crash <code>: the live session dies
	OpFile    Op = "file"    // file <path>: artifact.created
	OpDecide  Op = "decide"  // decide <text>: worker.result with one decision
	OpNext    Op = "next"    // next <directive>: queue it for the next prompt
	OpAfter   Op = "after"   // after <k> <directive>: queue it for the k-th prompt after this one
	OpWorker  Op = "worker"  // worker <directive>: queue it for the first prompt of the next new session
	// OpToolStart: toolstart <name> [arg]: tool.started only (the tool
	// never completes, as when a harness dies mid-tool).
	OpToolStart Op = "toolstart"
	// OpPlan: plan <status>:<text>[; <status>:<text>...]: plan.updated with
	// those steps (status pending, in_progress or completed).
	OpPlan Op = "plan"
	// OpThink: think <text>: the model's thinking, kept as a harness.event
	// {type: "agent_thought", text} (as the ACP adapter keeps a thought).
	OpThink Op = "think"
)

var knownOps = map[Op]bool{OpSay: true, OpJSON: true, OpTool: true, OpAsk: true, OpStream: true,
	OpCompact: true, OpUsage: true, OpSleep: true, OpHang: true, OpCrash: true, OpFile: true,
	OpDecide: true, OpNext: true, OpAfter: true, OpWorker: true, OpToolStart: true, OpPlan: true, OpThink: true}

// Step is one thing the fake model does during a turn. Which fields matter
// depends on Op:
//
//	say, json, decide: Text
//	tool:              Name, Text (the argument)
//	file:              Text (the path)
//	stream:            N (how many messages)
//	compact:           Trigger, Pre and Post (0: derived from the usage)
//	usage:             N (tokens used)
//	sleep:             Wait
//	crash:             N (exit code)
//	next, after:       N (prompts ahead, 1 for next), Text (the directive line)
//	worker:            Text (the directive line)
type Step struct {
	Op      Op
	Text    string
	Name    string
	N       int64
	Trigger string
	Pre     int64
	Post    int64
	Wait    time.Duration
}

// Say, JSON, Tool, Hang, Crash and friends build steps for Options.Script.

// Say is a step answering text.
func Say(text string) Step { return Step{Op: OpSay, Text: text} }

// Tool is a step running tool name with arg.
func Tool(name, arg string) Step { return Step{Op: OpTool, Name: name, Text: arg} }

// Hang is a step that never ends until the turn is cancelled.
func Hang() Step { return Step{Op: OpHang} }

// Crash is a step that kills the live session with exit code code.
func Crash(code int) Step { return Step{Op: OpCrash, N: int64(code)} }

// Compact is a step reporting a native compaction with trigger.
func Compact(trigger string) Step { return Step{Op: OpCompact, Trigger: trigger} }

// IsScript reports whether prompt is a script: it has at least one
// non-blank line and every non-blank line starts with a directive word.
// Anything else (prose, or prose mixed with directives) is answered with
// the echo, so a prompt Bridge writes itself (a checkpoint request quoting
// the record, say) never runs the directives it quotes.
func IsScript(prompt string) bool {
	found := false
	for _, line := range strings.Split(prompt, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		word, _, _ := cutWord(line)
		if !knownOps[Op(word)] {
			return false
		}
		found = true
	}
	return found
}

// Parse turns a script prompt into steps. It returns (nil, nil) when prompt
// is not a script (see IsScript) and an error naming the line when a
// directive's arguments are wrong.
func Parse(prompt string) ([]Step, error) {
	if !IsScript(prompt) {
		return nil, nil
	}
	var steps []Step
	for i, line := range strings.Split(prompt, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		s, err := ParseLine(line)
		if err != nil {
			return nil, fmt.Errorf("fake script line %d: %w", i+1, err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// ParseLine parses one directive line.
func ParseLine(line string) (Step, error) {
	word, rest, _ := cutWord(strings.TrimSpace(line))
	op := Op(word)
	switch op {
	case OpSay, OpJSON, OpDecide, OpThink:
		return Step{Op: op, Text: rest}, nil
	case OpFile:
		if rest == "" {
			return Step{}, fmt.Errorf("%s wants a path", op)
		}
		return Step{Op: op, Text: rest}, nil
	case OpTool, OpAsk, OpToolStart:
		name, arg, _ := cutWord(rest)
		if name == "" {
			return Step{}, fmt.Errorf("%s wants a name", op)
		}
		return Step{Op: op, Name: name, Text: arg}, nil
	case OpPlan:
		if _, err := PlanSteps(rest); err != nil {
			return Step{}, err
		}
		return Step{Op: op, Text: rest}, nil
	case OpStream, OpUsage, OpCrash:
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 0 || (op == OpCrash && n > 255) {
			return Step{}, fmt.Errorf("%s wants a number (got %q)", op, rest)
		}
		return Step{Op: op, N: n}, nil
	case OpSleep:
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 0 {
			return Step{}, fmt.Errorf("sleep wants milliseconds (got %q)", rest)
		}
		return Step{Op: op, Wait: time.Duration(n) * time.Millisecond}, nil
	case OpHang:
		return Step{Op: op}, nil
	case OpCompact:
		return parseCompact(rest)
	case OpNext, OpAfter, OpWorker:
		k := int64(1)
		if op == OpAfter {
			ks, r, _ := cutWord(rest)
			n, err := strconv.ParseInt(ks, 10, 64)
			if err != nil || n < 1 {
				return Step{}, fmt.Errorf("after wants a prompt count of at least 1 (got %q)", ks)
			}
			k, rest = n, r
		}
		if _, err := ParseLine(rest); err != nil || !knownOps[Op(firstWord(rest))] {
			return Step{}, fmt.Errorf("%s wants a directive (got %q)", op, rest)
		}
		return Step{Op: op, N: k, Text: rest}, nil
	}
	return Step{}, fmt.Errorf("unknown directive %q", word)
}

func parseCompact(rest string) (Step, error) {
	f := strings.Fields(rest)
	if len(f) != 1 && len(f) != 3 {
		return Step{}, fmt.Errorf("compact wants auto|manual [preTokens postTokens] (got %q)", rest)
	}
	s := Step{Op: OpCompact, Trigger: f[0]}
	if s.Trigger != "auto" && s.Trigger != "manual" {
		return Step{}, fmt.Errorf("compact trigger must be auto or manual (got %q)", f[0])
	}
	if len(f) == 3 {
		pre, err1 := strconv.ParseInt(f[1], 10, 64)
		post, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || pre < 0 || post < 0 {
			return Step{}, fmt.Errorf("compact token counts must be numbers (got %q)", rest)
		}
		s.Pre, s.Post = pre, post
	}
	return s, nil
}

// PlanSteps parses the argument of a plan directive:
// "<status>:<text>; <status>:<text>", status pending, in_progress or
// completed.
func PlanSteps(arg string) ([]core.PlanStep, error) {
	var out []core.PlanStep
	for _, part := range strings.Split(arg, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		st, text, ok := strings.Cut(part, ":")
		st, text = strings.TrimSpace(st), strings.TrimSpace(text)
		switch {
		case !ok || text == "":
			return nil, fmt.Errorf("plan step %q wants <status>:<text>", part)
		case st != "pending" && st != "in_progress" && st != "completed":
			return nil, fmt.Errorf("plan step status %q is not pending, in_progress or completed", st)
		}
		out = append(out, core.PlanStep{Text: text, Status: st})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("plan wants at least one <status>:<text> step")
	}
	return out, nil
}

func cutWord(s string) (word, rest string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, "", false
	}
	return s[:i], strings.TrimSpace(s[i+1:]), true
}

func firstWord(s string) string { w, _, _ := cutWord(s); return w }
