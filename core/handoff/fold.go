package handoff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// Fold limits (ARCHITECTURE.md, Migration).
const (
	MaxMessages        = 240   // user/assistant messages read from the source
	SourceCharBudget   = 60000 // characters of folded source
	SummaryCharBudget  = 2400  // default size of the written handoff
	RecentAssistant    = 6     // assistant messages kept in "recent output"
	AssistantClipChars = 900   // each recent assistant message is cut here
	VisualCharBudget   = 60000 // characters of visual evidence
	compactionShare    = 0.25  // of the source budget
	usersShare         = 0.45  // of the source budget
	separatorChars     = 2     // the blank line between sections
)

// FoldOptions overrides the limits; zero values mean the defaults.
type FoldOptions struct {
	MaxMessages  int
	SourceBudget int
	Lang         string // "en", "zh" or "" to detect from the messages
	// MoreBefore says the caller passed only the newest window of the
	// branch (see ReadWindow) and older messages exist.
	MoreBefore bool
}

// FoldStats says what the fold used and what it left out.
type FoldStats struct {
	MessagesTotal    int  `json:"messagesTotal"`
	MessagesRead     int  `json:"messagesRead"`
	UsersTotal       int  `json:"usersTotal"`
	UsersUsed        int  `json:"usersUsed"`
	AssistantUsed    int  `json:"assistantUsed"`
	CompactionChars  int  `json:"compactionChars"`
	UserChars        int  `json:"userChars"`
	RecentChars      int  `json:"recentChars"`
	SourceChars      int  `json:"sourceChars"`
	ReusedCompaction bool `json:"reusedCompaction"`
	Images           int  `json:"images"`
}

// Source is the folded text a summary worker reads.
type Source struct {
	Text    string
	Lang    string
	Stats   FoldStats
	Dropped []string // what was dropped or clipped, for the preview's warnings
}

type msg struct {
	user   bool
	text   string
	images int
}

// restoredHeader begins the text Bridge injects when it restores a session
// from a checkpoint (checkpoint.Render).
var restoredHeader = []byte("# Restored session")

// bridgeOwn marks the messages of branch that Bridge itself exchanged with
// the session rather than the conversation (see Own).
func bridgeOwn(branch []core.Entry) []bool {
	own := make([]bool, len(branch))
	var t Own
	for i, e := range branch {
		own[i] = t.Next(e)
	}
	return own
}

// Own follows a session's entries in order and says which messages Bridge
// itself exchanged with the session rather than the conversation: a
// checkpoint request (and its repair) with the model's reply, from
// `compaction.requested` until the commit, the failure, or the end of the
// process that never answered (a status or restoration entry); and the
// "restored session" text injected on restoration with the reply to it,
// until the `session.restored` entry. Only kinds are read, and the text of
// user messages that may be the restoration header. The zero value is
// ready at the start of a branch.
type Own struct{ exchange, restore bool }

// Next takes the next entry and reports whether it is a user or assistant
// message of Bridge's own.
func (t *Own) Next(e core.Entry) bool {
	switch e.Kind {
	case core.KindCompactionRequest:
		// A checkpoint asked of a fork exchanged nothing in the live thread.
		t.exchange = !forkRequest(e.Payload)
	case core.KindCheckpoint, core.KindCompaction, core.KindBranchSummary, core.KindCompactionFailed:
		t.exchange = false
	case core.KindSessionRestored, core.KindSessionResumeFail, core.KindSessionStatus:
		if e.Kind != core.KindSessionStatus || exitStatus(e.Payload) {
			t.exchange, t.restore = false, false
		}
	case core.KindUserMessage:
		if !t.exchange && bytes.Contains(e.Payload, restoredHeader) {
			var p struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			t.restore = strings.HasPrefix(p.Text, string(restoredHeader))
		} else if !t.exchange {
			t.restore = false
		}
		return t.exchange || t.restore
	case core.KindAssistantMessage:
		return t.exchange || t.restore
	}
	return false
}

// exitStatus reports whether a session.status payload says the harness
// process ended (Bridge's own "stopped" or "suspended").
func exitStatus(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte("stopped")) && !bytes.Contains(raw, []byte("suspended")) {
		return false
	}
	var p struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(raw, &p)
	return p.Status == "stopped" || p.Status == "suspended"
}

// Fold turns a source session's active branch into a bounded text: the
// newest earlier compaction summary, the user messages and the recent
// assistant output, within a 60,000-character budget split 25/45/30 with
// unused shares flowing back (users first, then recent output, then the
// summary). Tool traces are left out: the target cannot run them.
func Fold(branch []core.Entry, opt FoldOptions) Source {
	if opt.MaxMessages <= 0 {
		opt.MaxMessages = MaxMessages
	}
	if opt.SourceBudget <= 0 {
		opt.SourceBudget = SourceCharBudget
	}
	msgs, summary, total := readNewest(branch, opt.MaxMessages)
	st := FoldStats{MessagesTotal: total}
	st.MessagesRead = len(msgs)
	lang := opt.Lang
	if lang == "" {
		lang = usersLang(msgs)
	}
	var users, recent []string
	for i := len(msgs) - 1; i >= 0; i-- { // newest first
		m := msgs[i]
		st.Images += m.images
		if m.user {
			if m.text != "" || m.images > 0 {
				users = append(users, m.text)
			}
		} else if len(recent) < RecentAssistant && m.text != "" {
			recent = append(recent, clip(m.text, AssistantClipChars, lang))
		}
	}
	st.UsersTotal = len(users)

	labels := sectionLabels(lang)
	compHead, usersHead, recentHead := labels[0], labels[1], labels[2]
	needC := 0
	if summary != "" {
		needC = runes(compHead) + runes(summary)
	}
	needU := listNeed(usersHead, users)
	needR := listNeed(recentHead, recent)
	aC, aU, aR := allot(opt.SourceBudget, needC, needU, needR)

	var dropped []string
	var parts []string
	if needC > 0 {
		text, clipped := renderSummary(compHead, summary, aC, lang)
		if text != "" {
			parts = append(parts, text)
			st.ReusedCompaction = true
			st.CompactionChars = runes(text)
		}
		if clipped {
			dropped = append(dropped, fmt.Sprintf("earlier compaction summary clipped to %d of %d characters", runes(text), needC))
		}
	}
	if needU > 0 {
		text, used, clippedOne := renderList(usersHead, users, aU, lang)
		st.UsersUsed = used
		st.UserChars = runes(text)
		if text != "" {
			parts = append(parts, text)
		}
		if used < len(users) {
			dropped = append(dropped, fmt.Sprintf("%d oldest user messages dropped", len(users)-used))
		}
		if clippedOne {
			dropped = append(dropped, "newest user message clipped")
		}
	}
	if needR > 0 {
		text, used, clippedOne := renderList(recentHead, recent, aR, lang)
		st.AssistantUsed = used
		st.RecentChars = runes(text)
		if text != "" {
			parts = append(parts, text)
		}
		if used < len(recent) {
			dropped = append(dropped, fmt.Sprintf("%d older assistant messages dropped", len(recent)-used))
		}
		if clippedOne {
			dropped = append(dropped, "newest assistant message clipped")
		}
	}
	if st.MessagesTotal > st.MessagesRead {
		dropped = append(dropped, fmt.Sprintf("%d messages older than the newest %d were not read", st.MessagesTotal-st.MessagesRead, opt.MaxMessages))
	} else if opt.MoreBefore {
		dropped = append(dropped, fmt.Sprintf("messages older than the newest %d were not read", st.MessagesRead))
	}
	text := strings.Join(parts, "\n\n")
	st.SourceChars = runes(text)
	return Source{Text: text, Lang: lang, Stats: st, Dropped: dropped}
}

// readNewest walks back from the newest entry of branch: it decodes only
// the newest limit messages (oldest first in msgs) and the newest summary;
// older messages are only counted in total.
func readNewest(branch []core.Entry, limit int) (msgs []msg, summary string, total int) {
	own := bridgeOwn(branch)
	for i := len(branch) - 1; i >= 0; i-- {
		e := branch[i]
		switch e.Kind {
		case core.KindUserMessage, core.KindAssistantMessage:
			if own[i] {
				continue
			}
			total++
			if len(msgs) == limit {
				continue
			}
			var p struct {
				Text   string `json:"text"`
				Images int    `json:"images"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			t := p.Text
			if e.Kind == core.KindAssistantMessage {
				t = stripThink(t)
			}
			msgs = append(msgs, msg{user: e.Kind == core.KindUserMessage, text: strings.TrimSpace(t), images: p.Images})
		case core.KindCheckpoint, core.KindContextCompacted, core.KindBranchSummary:
			if summary != "" {
				continue
			}
			var p struct {
				Summary string `json:"summary"`
			}
			if json.Unmarshal(e.Payload, &p) == nil && strings.TrimSpace(p.Summary) != "" && p.Summary != checkpoint.MarkerSummary {
				summary = strings.TrimSpace(p.Summary)
			}
		}
	}
	for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
		msgs[i], msgs[j] = msgs[j], msgs[i]
	}
	return msgs, summary, total
}

// usersLang is the language of the user's messages (their first 16,000
// bytes or so).
func usersLang(msgs []msg) string {
	var sb strings.Builder
	for _, m := range msgs {
		if m.user {
			sb.WriteString(m.text)
			if sb.Len() > 16000 {
				break
			}
		}
	}
	return DetectLang(sb.String())
}

// allot shares budget among the three sections by need: each gets up to
// its share, then what is left goes to the users', the recent and the
// compaction section in that order. The separators between the sections
// present come out of the budget first.
func allot(budget, needC, needU, needR int) (aC, aU, aR int) {
	present := 0
	for _, n := range []int{needC, needU, needR} {
		if n > 0 {
			present++
		}
	}
	if present > 1 {
		budget -= separatorChars * (present - 1)
	}
	qC := int(float64(budget) * compactionShare)
	qU := int(float64(budget) * usersShare)
	qR := budget - qC - qU
	aC, aU, aR = min(needC, qC), min(needU, qU), min(needR, qR)
	left := budget - aC - aU - aR
	for _, p := range []*struct{ a, need *int }{{&aU, &needU}, {&aR, &needR}, {&aC, &needC}} {
		extra := min(left, *p.need-*p.a)
		*p.a += extra
		left -= extra
	}
	return aC, aU, aR
}

func sectionLabels(lang string) [3]string {
	if lang == "zh" {
		return [3]string{"### 较早的压缩摘要\n", "### 用户消息（最新在前）\n", "### 最近的助手输出（最新在前）\n"}
	}
	return [3]string{"### Earlier compaction summary\n", "### User messages (newest first)\n", "### Recent assistant output (newest first)\n"}
}

func truncMarker(lang string) string {
	if lang == "zh" {
		return "…（底稿截断）"
	}
	return "… (truncated)"
}

// listNeed is the size of a numbered list section holding every item.
func listNeed(head string, items []string) int {
	if len(items) == 0 {
		return 0
	}
	n := runes(head)
	for i, it := range items {
		n += runes(listLine(i, it))
	}
	return n
}

func listLine(i int, text string) string { return fmt.Sprintf("[%d] %s\n", i+1, text) }

// renderSummary fits head+summary into limit characters, cutting the
// summary with a marker; it returns "" when not even that fits.
func renderSummary(head, summary string, limit int, lang string) (string, bool) {
	full := head + summary
	if runes(full) <= limit {
		return full, false
	}
	room := limit - runes(head) - runes(truncMarker(lang))
	if room <= 0 {
		return "", true
	}
	return head + string([]rune(summary)[:room]) + truncMarker(lang), true
}

// renderList keeps whole items newest first while they fit; when not even
// the newest fits whole, it is clipped to the room left.
func renderList(head string, items []string, limit int, lang string) (string, int, bool) {
	if limit <= runes(head) {
		return "", 0, false
	}
	var b strings.Builder
	b.WriteString(head)
	used := runes(head)
	n := 0
	for i, it := range items {
		line := listLine(i, it)
		if used+runes(line) > limit {
			if n == 0 {
				prefix := fmt.Sprintf("[%d] ", i+1)
				room := limit - used - runes(prefix) - runes(truncMarker(lang)) - 1
				if room > 0 {
					b.WriteString(prefix + string([]rune(it)[:room]) + truncMarker(lang) + "\n")
					return b.String(), 1, true
				}
			}
			break
		}
		b.WriteString(line)
		used += runes(line)
		n++
	}
	if n == 0 {
		return "", 0, false
	}
	return b.String(), n, false
}

// clip cuts text to max characters, marking the cut.
func clip(text string, max int, lang string) string {
	if runes(text) <= max {
		return text
	}
	m := truncMarker(lang)
	return string([]rune(text)[:max-runes(m)]) + m
}

// stripThink removes <think>…</think> blocks with one linear scan.
func stripThink(s string) string {
	if !strings.Contains(s, "<think>") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "<think>")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i:], "</think>")
		if j < 0 {
			break
		}
		s = s[i+j+len("</think>"):]
	}
	return b.String()
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// forkRequest reports whether a compaction.requested payload says the
// checkpoint was asked of a fork (method "fork").
func forkRequest(raw []byte) bool {
	var p struct {
		Method core.CheckpointMethod `json:"method"`
	}
	return json.Unmarshal(raw, &p) == nil && p.Method == core.CheckpointFork
}
