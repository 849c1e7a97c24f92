package fake

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/core/handoff"
)

// handoffReply answers a summary worker's request (handoff.Instruction
// followed by the folded material) with a five-part handoff written from
// the material, so that migration works on the fake harness without a
// script: the goal is the oldest user message the material holds, the
// current state and next step quote the newest user message and answer. It
// reports false for any other prompt. A queued worker directive (or any
// other script) still takes precedence.
func handoffReply(prompt string) (string, bool) {
	lang := ""
	for _, l := range []string{"en", "zh"} {
		if asksForHandoff(prompt, l) {
			lang = l
			break
		}
	}
	if lang == "" {
		return "", false
	}
	users := materialList(prompt, "### User messages (newest first)", "### 用户消息（最新在前）")
	answers := materialList(prompt, "### Recent assistant output (newest first)", "### 最近的助手输出（最新在前）")
	first, last, answer := "", "", ""
	if len(users) > 0 {
		first, last = users[len(users)-1], users[0]
	}
	if len(answers) > 0 {
		answer = answers[0]
	}
	w := handoffWords[lang]
	h := func(p handoff.Part) string { return "## " + handoff.Heading(lang, p) + "\n" }
	var b strings.Builder
	b.WriteString(h(handoff.Goal) + orElse(first, w.goal) + "\n\n")
	fmt.Fprintf(&b, "%s"+w.state+"\n\n", h(handoff.CurrentState), len(users), len(answers), orElse(last, w.none), orElse(answer, w.none))
	b.WriteString(h(handoff.KeyDecisions) + w.decisions + "\n\n")
	b.WriteString(h(handoff.KeyFiles) + w.files + "\n\n")
	b.WriteString(h(handoff.NextStep) + w.next + orElse(last, w.none) + "\n")
	return b.String(), true
}

// handoffWords are the fixed words of the fake's handoff, per language.
var handoffWords = map[string]struct{ goal, state, decisions, files, next, none string }{
	"en": {
		goal:      "Continue the conversation of another session.",
		state:     "The material holds %d user message(s) and %d assistant answer(s) (this handoff was written by the fake harness from the material alone). The newest user message: %s\nThe newest answer: %s",
		decisions: "- No decisions are recorded in the material.",
		files:     "(none available from the material)",
		next:      "Answer the newest user message: ",
		none:      "(none)",
	},
	"zh": {
		goal:      "继续另一个会话中的对话。",
		state:     "材料中有 %d 条用户消息和 %d 条助手输出（由 fake harness 根据材料写成）。最新的用户消息：%s\n最新的回答：%s",
		decisions: "- 材料中没有记录决策。",
		files:     "（材料中没有可用的文件）",
		next:      "回应最新的用户消息：",
		none:      "（无）",
	},
}

// asksForHandoff: prompt names the five headings of lang, in order, as the
// summary worker's instruction does.
func asksForHandoff(prompt, lang string) bool {
	rest := prompt
	for p := handoff.Goal; p <= handoff.NextStep; p++ {
		i := strings.Index(rest, "## "+handoff.Heading(lang, p))
		if i < 0 {
			return false
		}
		rest = rest[i:]
	}
	return true
}

// materialList returns the items ("[n] text") of the folded material's
// list under whichever of heads it holds, each item's first line clipped to
// 300 characters.
func materialList(prompt string, heads ...string) []string {
	for _, head := range heads {
		_, after, ok := strings.Cut(prompt, head+"\n")
		if !ok {
			continue
		}
		var items []string
		for _, line := range strings.Split(after, "\n") {
			if strings.HasPrefix(line, "### ") {
				break
			}
			if line == "" || line[0] != '[' {
				continue
			}
			if _, text, ok := strings.Cut(line, "] "); ok {
				items = append(items, clip(strings.TrimSpace(text), 300))
			}
		}
		return items
	}
	return nil
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
