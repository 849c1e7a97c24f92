package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// contentBlock is an ACP content block as a prompt carries it.
type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Resource *struct {
		URI      string `json:"uri"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
		MimeType string `json:"mimeType"`
	} `json:"resource"`
}

// contentOf turns an ACP prompt into the contract's content: text and
// images as they are, a resource link as its address, an embedded text
// resource as text naming its address.
func contentOf(blocks []contentBlock) ([]schema.Content, error) {
	out := make([]schema.Content, 0, len(blocks))
	for i, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, schema.Content{Type: schema.ContentText, Text: b.Text})
		case "image":
			if b.Data == "" || b.MimeType == "" {
				return nil, badParams("prompt[%d]: an image needs data and mimeType", i)
			}
			out = append(out, schema.Content{Type: schema.ContentImage, MediaType: b.MimeType, Data: b.Data})
		case "resource_link":
			name := b.Name
			if name == "" {
				name = b.URI
			}
			out = append(out, schema.Content{Type: schema.ContentText, Text: fmt.Sprintf("[%s](%s)", name, b.URI)})
		case "resource":
			if b.Resource == nil {
				return nil, badParams("prompt[%d]: a resource block needs resource", i)
			}
			if b.Resource.Blob != "" && b.Resource.Text == "" {
				return nil, badParams("prompt[%d]: binary resource %s: only text resources are accepted", i, b.Resource.URI)
			}
			out = append(out, schema.Content{Type: schema.ContentText,
				Text: fmt.Sprintf("Contents of %s:\n```\n%s\n```", b.Resource.URI, b.Resource.Text)})
		case "audio":
			return nil, badParams("prompt[%d]: audio is not accepted (promptCapabilities.audio is false)", i)
		default:
			return nil, badParams("prompt[%d]: content type %q is unknown", i, b.Type)
		}
	}
	if len(out) == 0 {
		return nil, badParams("prompt must hold at least one content block")
	}
	return out, nil
}

// stopReasons are ACP's stop reasons; a harness's other reasons end the
// turn as end_turn.
var stopReasons = map[string]bool{"end_turn": true, "max_tokens": true, "max_turn_requests": true, "refusal": true, "cancelled": true}

func (s *Server) prompt(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string         `json:"sessionId"`
		Prompt    []contentBlock `json:"prompt"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, badParams("sessionId is required")
	}
	content, err := contentOf(p.Prompt)
	if err != nil {
		return nil, err
	}
	if s.opened(p.SessionID) == nil {
		// A client that kept the id from an earlier connection and prompts
		// without loading: the session's updates are sent from now on.
		s.open(p.SessionID, "")
	}
	if name, arg, ok := slashCommand(content); ok {
		if cmd, ok := commandNamed(name); ok {
			text, err := cmd.run(s, ctx, p.SessionID, arg)
			if err != nil {
				return nil, err
			}
			s.send(p.SessionID, chunk("agent_message_chunk", text))
			return promptResult{StopReason: "end_turn"}, nil
		}
	}
	before, ok := s.sessionTotal(ctx, p.SessionID)
	r, err := s.b.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: p.SessionID, Content: content})
	if err != nil {
		if errors.Is(err, context.Canceled) || core.ErrorCode(err) == core.CodeCancelled {
			return promptResult{StopReason: "cancelled"}, nil
		}
		return nil, err
	}
	stop := r.StopReason
	if !stopReasons[stop] {
		stop = "end_turn"
	}
	res := promptResult{StopReason: stop}
	s.turnUsage(ctx, p.SessionID, before, ok, &res)
	return res, nil
}

// slashCommand reads "/name args" from a prompt that is one text block.
func slashCommand(content []schema.Content) (name, arg string, ok bool) {
	if len(content) != 1 || content[0].Type != schema.ContentText {
		return "", "", false
	}
	t := strings.TrimSpace(content[0].Text)
	if !strings.HasPrefix(t, "/") {
		return "", "", false
	}
	name, arg, _ = strings.Cut(t[1:], " ")
	if name == "" {
		return "", "", false
	}
	return name, strings.TrimSpace(arg), true
}
