package handoff

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// TokenLimit converts a character budget to the token limit the worker is
// given: max(100, round(chars / (2400/900))), 900 at the default.
func TokenLimit(summaryChars int) int {
	if summaryChars <= 0 {
		summaryChars = SummaryCharBudget
	}
	return max(100, int(math.Round(float64(summaryChars)/(2400.0/900.0))))
}

// Instruction is what the summary worker is asked to do with the folded
// source: write the five sections, in lang's headings, within the budget.
func Instruction(lang string, summaryChars int) string {
	h := func(p Part) string { return "## " + Heading(lang, p) }
	tokens := TokenLimit(summaryChars)
	if lang == "zh" {
		return fmt.Sprintf(`你是交接摘要员。下面是另一个会话的材料。请写一份交接摘要，供一个没有该会话上下文、工具集也不同的新会话接手任务。
只输出以下五个部分，标题原样使用，顺序不变，总长度不超过 %d tokens：
%s（1–2 句：目标与完成标准）
%s（3–5 句）
%s（最多 5 条，每条附理由）
%s（最多 10 个路径，每行一个；只能是材料中出现过的路径）
%s（1–2 句）
规则：精确的数字、标识和路径原样照抄，单独成行；已作废、被撤销或被替换的旧值一律不写；与旧工具集绑定的规则不写；不要调用任何工具。

材料：
`, tokens, h(Goal), h(CurrentState), h(KeyDecisions), h(KeyFiles), h(NextStep))
	}
	return fmt.Sprintf(`You write handoffs. Below is material from another session. Write a handoff for a new session that has none of that session's context and a different tool set.
Output only these five sections, with these exact headings, in this order, within %d tokens:
%s (1-2 sentences: the goal and what done means)
%s (3-5 sentences)
%s (at most 5 bullets, each with its reason)
%s (at most 10 paths, one per line; only paths that appear in the material)
%s (1-2 sentences)
Rules: copy exact numbers, identifiers and paths verbatim, each on its own line; leave out obsolete, revoked or superseded values entirely; leave out rules tied to the old tool set; call no tools.

Material:
`, tokens, h(Goal), h(CurrentState), h(KeyDecisions), h(KeyFiles), h(NextStep))
}

// RepairInstruction asks the summary worker, in the same session, to
// rewrite its handoff within the budget: the same five sections, shorter.
// got is the length it wrote, budget the characters allowed.
func RepairInstruction(lang string, got, budget int) string {
	if lang == "zh" {
		return fmt.Sprintf(`你的交接摘要有 %d 个字符，超出了 %d 个字符的上限。请把同样的五个部分重写到 %d 个字符以内：标题原样，顺序不变；精确的数字、标识和路径照抄；删减叙述而不是事实。只输出这五个部分，不要调用任何工具。`, got, budget, budget)
	}
	return fmt.Sprintf(`Your handoff is %d characters, over its %d-character limit. Rewrite the same five sections within %d characters: the same headings in the same order; copy exact numbers, identifiers and paths; cut wording, not facts. Output only the five sections and call no tools.`, got, budget, budget)
}

// Kickoff is the first message to the target session: the handoff, then
// either "restate and wait" (the default) or "restate and continue".
func Kickoff(lang, summary string, cont bool) string {
	if lang == "zh" {
		ask := "请用一小段话复述你对任务与当前状态的理解，然后停下，等待用户确认。"
		if cont {
			ask = "请用一小段话复述你对任务与当前状态的理解，然后继续执行下一步。"
		}
		return "这个任务从另一个会话迁移而来。以下是经过审阅的交接摘要；只按其中当前有效的值行事。\n\n" +
			summary + "\n\n" + ask
	}
	ask := "Restate your understanding of the task and its current state in one short paragraph, then stop and wait for the user."
	if cont {
		ask = "Restate your understanding of the task and its current state in one short paragraph, then continue with the next step."
	}
	return "This task was moved here from another session. Below is the reviewed handoff; act only on values that are currently in effect.\n\n" +
		summary + "\n\n" + ask
}

// UnresolvedNote is added to the kickoff of a target that refused the
// unresolved images: it says they exist and were not seen.
func UnresolvedNote(lang string, images int) string {
	if lang == "zh" {
		return fmt.Sprintf("注意：源会话中有 %d 张图片从未得到回答，而你的模型无法读取图片，所以你没有看到它们。它们仍未解析：在依赖其内容之前，请先向用户询问图片里有什么。", images)
	}
	return fmt.Sprintf("Note: %d image(s) in the source session were never answered, and your model reads no images, so you have not seen them. They remain unresolved: ask the user what they show before relying on them.", images)
}

// EvidenceBlock is one image-bearing user message and the assistant text
// that answered it.
type EvidenceBlock struct {
	EntryID       string
	UserText      string
	AssistantText string
	Images        int
	// Attachments are the images Bridge kept (none for imported sessions).
	Attachments []core.Attachment
	// HostImages are the harness's own references to the images it kept
	// (recoverable through its session.attachment).
	HostImages []core.HostImage
}

// Cost is the block's charge against the visual evidence budget.
func (b EvidenceBlock) Cost() int { return runes(b.UserText) + runes(b.AssistantText) + 240 }

// Visual is the visual evidence of a source session.
type Visual struct {
	Answered []EvidenceBlock // kept, in time order
	// Omitted counts the answered blocks left out for the budget: each one
	// did not fit in what the newer blocks had left of it.
	Omitted int
	// OmittedIDs are the entry ids of those blocks, in time order.
	OmittedIDs []string
	Unresolved []EvidenceBlock // image messages nobody answered
	Images     int
	Budget     int // the budget the blocks were admitted against
}

// CollectVisual pairs each image-bearing user message with all assistant
// text up to the next user message. Answered blocks are admitted whole,
// newest first: a block that does not fit in what is left of the budget is
// left out (never cut), and older blocks that still fit are kept. The kept
// blocks are shown in time order.
func CollectVisual(branch []core.Entry, budget int) Visual {
	if budget <= 0 {
		budget = VisualCharBudget
	}
	var blocks []EvidenceBlock
	var cur *EvidenceBlock
	for _, e := range branch {
		var p struct {
			Text        string            `json:"text"`
			Images      int               `json:"images"`
			Attachments []core.Attachment `json:"attachments"`
			HostImages  []core.HostImage  `json:"hostImages"`
		}
		switch e.Kind {
		case core.KindUserMessage:
			_ = json.Unmarshal(e.Payload, &p)
			if cur != nil {
				blocks = append(blocks, *cur)
				cur = nil
			}
			if p.Images > 0 {
				cur = &EvidenceBlock{EntryID: e.ID, UserText: p.Text, Images: p.Images, Attachments: p.Attachments, HostImages: p.HostImages}
			}
		case core.KindAssistantMessage:
			if cur != nil {
				_ = json.Unmarshal(e.Payload, &p)
				if t := strings.TrimSpace(stripThink(p.Text)); t != "" {
					if cur.AssistantText != "" {
						cur.AssistantText += "\n"
					}
					cur.AssistantText += t
				}
			}
		}
	}
	if cur != nil {
		blocks = append(blocks, *cur)
	}
	v := Visual{Budget: budget}
	var answered []EvidenceBlock
	for _, b := range blocks {
		v.Images += b.Images
		if b.AssistantText == "" {
			v.Unresolved = append(v.Unresolved, b)
		} else {
			answered = append(answered, b)
		}
	}
	keep := make([]bool, len(answered))
	used := 0
	for i := len(answered) - 1; i >= 0; i-- {
		if c := answered[i].Cost(); used+c <= budget {
			used += c
			keep[i] = true
		}
	}
	for i, b := range answered {
		if keep[i] {
			v.Answered = append(v.Answered, b)
		} else {
			v.Omitted++
			v.OmittedIDs = append(v.OmittedIDs, b.EntryID)
		}
	}
	return v
}

// OmittedWarning says which answered blocks were left out for the budget
// ("" when none was).
func (v Visual) OmittedWarning() string {
	if v.Omitted == 0 {
		return ""
	}
	return fmt.Sprintf("%d visual evidence block(s) left out whole, as each did not fit in what the newer blocks left of the %d-character budget (entries %s)",
		v.Omitted, v.Budget, strings.Join(v.OmittedIDs, ", "))
}

// Appendix renders the visual evidence as Markdown sections to append to a
// handoff ("" when there is none).
func (v Visual) Appendix(lang string) string {
	var b strings.Builder
	if len(v.Answered) > 0 {
		if lang == "zh" {
			b.WriteString("## " + visualHeadingZh + "\n")
		} else {
			b.WriteString("## " + visualHeadingEn + "\n")
		}
		if v.Omitted > 0 {
			fmt.Fprintf(&b, "(%d block(s) left out whole for the budget)\n", v.Omitted)
		}
		for i, blk := range v.Answered {
			fmt.Fprintf(&b, "\n### Image message %d (%d image(s))\nUser: %s\nAssistant: %s\n", i+1, blk.Images, blk.UserText, blk.AssistantText)
		}
	}
	if len(v.Unresolved) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if lang == "zh" {
			b.WriteString("## " + unresolvedHeadingZh + "\n")
		} else {
			b.WriteString("## " + unresolvedHeadingEn + "\n")
		}
		for _, blk := range v.Unresolved {
			fmt.Fprintf(&b, "- %d image(s) with no answer, sent with: %q (entry %s)\n", blk.Images, blk.UserText, blk.EntryID)
		}
	}
	return b.String()
}

// The headings of the sections Appendix writes. They stay outside the
// summary budget.
const (
	visualHeadingEn     = "Visual evidence — verbatim, not summarized"
	visualHeadingZh     = "视觉证据（原文，未经摘要）"
	unresolvedHeadingEn = "Unresolved images"
	unresolvedHeadingZh = "未解析的图片"
)

// SummaryChars is how many characters of a handoff the summary budget
// holds: the text in Unicode code points, trimmed of surrounding white
// space, without the visual evidence and unresolved images sections (from
// their "## " heading to the next one), which have their own budget. The
// preview and migration/execute count alike, so an edited handoff is judged
// by the rule the preview was.
func SummaryChars(md string) int {
	var kept strings.Builder
	skip, inFence := false, false
	for _, line := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "## ") {
			switch strings.TrimSpace(line[3:]) {
			case visualHeadingEn, visualHeadingZh, unresolvedHeadingEn, unresolvedHeadingZh:
				skip = true
			default:
				skip = false
			}
		}
		if !skip {
			kept.WriteString(line)
			kept.WriteString("\n")
		}
	}
	return runes(strings.TrimSpace(kept.String()))
}
