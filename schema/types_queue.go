package schema

import (
	"encoding/json"
	"time"
)

// Stop reasons of a session/prompt that did not run a turn of its own.
const (
	// StopSteered: the prompt was delivered into the turn that was running
	// (steer: true); that turn's prompt is answered when it ends.
	StopSteered = "steered"
	// StopWithdrawn: the prompt waited in the queue and was withdrawn
	// (session/withdraw, or session/cancel with clearQueue) before it ran.
	StopWithdrawn = "withdrawn"
)

// QueuedPrompt is a prompt waiting in a session's queue for the running
// turn to end.
type QueuedPrompt struct {
	// PromptID names the prompt (the client's own promptId, or one Bridge
	// made).
	PromptID string `json:"promptId"`
	// Text is the prompt's text blocks, joined by newlines.
	Text string `json:"text"`
	// Images counts the prompt's image blocks.
	Images int `json:"images,omitempty"`
	// QueuedAt is when the prompt joined the queue.
	QueuedAt time.Time `json:"queuedAt"`
}

// SessionQueueParams lists a session's queued prompts.
type SessionQueueParams struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
}

// SessionQueueResult is the queue, first to run first.
type SessionQueueResult struct {
	// Items are the queued prompts, in the order they will run.
	Items []QueuedPrompt `json:"items"`
}

// MarshalJSON writes an empty queue as [] rather than null.
func (r SessionQueueResult) MarshalJSON() ([]byte, error) {
	type plain SessionQueueResult
	return json.Marshal(filled(plain(r)))
}

// SessionWithdrawParams takes a queued prompt back before it runs; its
// session/prompt is answered with stopReason "withdrawn".
type SessionWithdrawParams struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// PromptID is the queued prompt to withdraw.
	PromptID string `json:"promptId"`
}

// SessionWithdrawResult acknowledges session/withdraw.
type SessionWithdrawResult struct{}

// QueueChangedNotification tells the client a session's queue changed: a
// prompt joined it, left it to run, or was withdrawn (session/queueChanged).
type QueueChangedNotification struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// Items is the whole queue now, in the order it will run.
	Items []QueuedPrompt `json:"items"`
}

// MarshalJSON writes an empty queue as [] rather than null.
func (n QueueChangedNotification) MarshalJSON() ([]byte, error) {
	type plain QueueChangedNotification
	return json.Marshal(filled(plain(n)))
}
