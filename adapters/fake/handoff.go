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
	h := func(p handoff.Part) string { return "## " + handoff.Heading(lang, p) + "\n" }
	var b strings.Builder
	if lang == "zh" {
		b.WriteString(h(handoff.Goal) + orElse(first, "继续另一个会话中的对话。") + "\n\n")
		fmt.Fprintf(&b, "%s材料中有 %d 条用户消息和 %d 条助手输出（由 fake harness 根据材料写成）。最新的用户消息：%s\n最新的回答：%s\n\n",
			h(handoff.CurrentState), len(users), len(answers), orElse(last, "（无）"), orElse(answer, "（无）"))
		b.WriteString(h(handoff.KeyDecisions) + "- 材料中没有记录决策。\n\n")
		b.WriteString(h(handoff.KeyFiles) + "（材料中没有可用的文件）\n\n")
		b.WriteString(h(handoff.NextStep) + "回应最新的用户消息：" + orElse(last, "（无）") + "\n")
		return b.String(), true
	}
	b.WriteString(h(handoff.Goal) + orElse(first, "Continue the conversation of another session.") + "\n\n")
	fmt.Fprintf(&b, "%sThe material holds %d user message(s) and %d assistant answer(s) (this handoff was written by the fake harness from the material alone). The newest user message: %s\nThe newest answer: %s\n\n",
		h(handoff.CurrentState), len(users), len(answers), orElse(last, "(none)"), orElse(answer, "(none)"))
	b.WriteString(h(handoff.KeyDecisions) + "- No decisions are recorded in the material.\n\n")
	b.WriteString(h(handoff.KeyFiles) + "(none available from the material)\n\n")
	b.WriteString(h(handoff.NextStep) + "Answer the newest user message: " + orElse(last, "(none)") + "\n")
	return b.String(), true
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
