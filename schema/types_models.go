package schema

import "encoding/json"

// SessionModelsParams asks which models a session's harness offers.
type SessionModelsParams struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
}

// SessionModelsResult lists the models on offer and the session's current
// model and effort.
type SessionModelsResult struct {
	// Models are the models the session's harness offers, with their
	// context window where the harness says.
	Models []Model `json:"models"`
	// Model is the session's current model ("" when the harness default).
	Model string `json:"model,omitempty"`
	// Effort is the session's current reasoning effort ("" when the
	// default).
	Effort string `json:"effort,omitempty"`
}

// MarshalJSON writes an empty list as [] rather than null.
func (r SessionModelsResult) MarshalJSON() ([]byte, error) {
	type plain SessionModelsResult
	return json.Marshal(filled(plain(r)))
}

// SessionSelectModelParams switches a live session's model and/or effort.
// A switch to a model with a smaller context window, or to a lower effort,
// is a downgrade: a before_downgrade checkpoint is written first, on the
// old model. A harness that cannot switch live is refused (unavailable)
// before anything changes.
type SessionSelectModelParams struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// Model is the model to switch to ("" keeps the model).
	Model string `json:"model,omitempty"`
	// Effort is the reasoning effort to switch to ("" keeps the effort).
	Effort string `json:"effort,omitempty"`
}

// SessionSelectModelResult says what the session runs with now.
type SessionSelectModelResult struct {
	// Model is the session's model after the switch.
	Model string `json:"model,omitempty"`
	// Effort is the session's effort after the switch.
	Effort string `json:"effort,omitempty"`
	// Downgrade is true when the switch lowered the context window or the
	// effort.
	Downgrade bool `json:"downgrade,omitempty"`
	// CheckpointEntryID is the before_downgrade checkpoint written first.
	CheckpointEntryID string `json:"checkpointEntryId,omitempty"`
	// CheckpointNote says why a downgrade wrote no checkpoint (the usual
	// decision suppressed it).
	CheckpointNote string `json:"checkpointNote,omitempty"`
}
