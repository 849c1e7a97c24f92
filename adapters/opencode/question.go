package opencode

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// questionAsked is the properties of a question.asked event: the model
// called OpenCode's `question` tool, which waits until a client replies
// (POST /question/{id}/reply) or dismisses it (POST /question/{id}/reject).
type questionAsked struct {
	ID        string         `json:"id"`
	SessionID string         `json:"sessionID"`
	Questions []questionInfo `json:"questions"`
	Tool      *struct {
		MessageID string `json:"messageID"`
		CallID    string `json:"callID"`
	} `json:"tool"`
}

// questionInfo is one question of a question.asked request.
type questionInfo struct {
	Question string `json:"question"`
	Header   string `json:"header"`
	Options  []struct {
		Label       string `json:"label"`
		Description string `json:"description"`
	} `json:"options"`
	Multiple bool `json:"multiple,omitempty"`
}

// questionReply is the body of POST /question/{id}/reply: per question, the
// labels chosen.
type questionReply struct {
	Answers [][]string `json:"answers"`
}

// dismissOption is the option that dismisses a question.
const dismissOption = "dismiss"

// questionRequests turns one question.asked request into the approval
// requests Bridge relays, one per question, in order. Each answer is an
// allow-once option named by its label; the last option dismisses.
func questionRequests(q questionAsked) []core.ApprovalRequest {
	out := make([]core.ApprovalRequest, 0, len(q.Questions))
	for i, info := range q.Questions {
		title := strings.TrimSpace(info.Question)
		if h := strings.TrimSpace(info.Header); h != "" && h != title {
			title = h + ": " + title
		}
		r := core.ApprovalRequest{ID: q.ID, Kind: "other", Key: "opencode:question", Title: "Question: " + title,
			Question: true}
		if len(q.Questions) > 1 {
			r.ID = q.ID + "/" + strconv.Itoa(i+1)
		}
		if q.Tool != nil {
			r.ToolCallID = q.Tool.CallID
		}
		if b, err := json.Marshal(info); err == nil {
			r.RawInput = b
		}
		for j, o := range info.Options {
			name := strings.TrimSpace(o.Label)
			if name == "" {
				continue
			}
			r.Options = append(r.Options, core.ApprovalOption{ID: "answer-" + strconv.Itoa(j+1), Name: name,
				Kind: core.AllowOnce})
		}
		r.Options = append(r.Options, core.ApprovalOption{ID: dismissOption, Name: "Dismiss", Kind: core.RejectOnce})
		out = append(out, r)
	}
	return out
}

// answerOf is the label the user chose with d, or false when d does not
// answer r (a dismissal, or a decision nobody but the policy made).
func answerOf(r core.ApprovalRequest, d core.ApprovalDecision) (string, bool) {
	if d.By != core.DecidedByUser || !d.Allowed() {
		return "", false
	}
	for _, o := range r.Options {
		if o.ID == d.OptionID && core.Allows(o.Kind) {
			return o.Name, true
		}
	}
	return "", false
}

// questionEvent relays question.asked to the session's approver, one
// question after another, off the event stream, and replies to OpenCode
// with the labels chosen; a question the user dismisses (or that nobody
// answers) dismisses the request, so the tool fails and OpenCode ends the
// turn instead of waiting for ever. question.replied and question.rejected
// withdraw a request another client answered.
func (l *live) questionEvent(ev event) {
	switch ev.Type {
	case "question.replied", "question.rejected":
		l.withdraw(ev)
		return
	case "question.asked":
	default:
		return
	}
	var q questionAsked
	if err := json.Unmarshal(ev.Properties, &q); err != nil || q.ID == "" {
		return
	}
	l.answerOffStream(q.ID, func(ctx context.Context, req core.CreateRequest) func() {
		answers := make([][]string, 0, len(q.Questions))
		for _, r := range questionRequests(q) {
			label, ok := answerOf(r, req.Approval(ctx, r))
			if !ok || ctx.Err() != nil {
				answers = nil
				break
			}
			answers = append(answers, []string{label})
		}
		path := "/question/" + url.PathEscape(q.ID)
		if len(q.Questions) == 0 || answers == nil {
			return func() { _ = l.h.do(l.srv.ctx, l.srv, http.MethodPost, path+"/reject", dirQuery(l.dir), nil, nil) }
		}
		return func() {
			_ = l.h.do(l.srv.ctx, l.srv, http.MethodPost, path+"/reply", dirQuery(l.dir), questionReply{Answers: answers}, nil)
		}
	})
}
