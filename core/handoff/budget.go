package handoff

import "github.com/bridge-dev/bridge/core"

// OverBudgetError is a handoff refused for its size: Chars (counted as
// SummaryChars counts) over Budget. Err is the domain error the caller
// sees (invalid, naming the allowOverBudget field), which it wraps.
// Callers find it with errors.As.
type OverBudgetError struct {
	Chars, Budget int
	Err           *core.Error
}

func (e *OverBudgetError) Error() string { return e.Err.Error() }

// Unwrap returns the domain error.
func (e *OverBudgetError) Unwrap() error { return e.Err }

// OverBudget is the refusal of a handoff of chars characters over its
// budget of budget: the caller may edit it, or pass allowOverBudget.
func OverBudget(chars, budget int) *OverBudgetError {
	return &OverBudgetError{Chars: chars, Budget: budget, Err: core.InvalidField("allowOverBudget",
		"the handoff is %d characters, over its %d-character summary budget: edit it within the budget, or pass allowOverBudget to send it as it is", chars, budget)}
}
