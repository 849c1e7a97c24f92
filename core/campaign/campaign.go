// Package campaign sizes the project's adversarial test campaign (kills at
// random moments, fuzzed frames and params, mutated transcripts): CI runs
// bounded counts by default; BRIDGE_CAMPAIGN=nightly raises them to the
// nightly size.
package campaign

import (
	"os"
	"strconv"
)

// Env is the variable that selects the campaign's size: "nightly" for the
// nightly counts, or a number to set every count to it.
const Env = "BRIDGE_CAMPAIGN"

// Count returns ci, or nightly when Env is "nightly", or Env's value when
// it is a positive number.
func Count(ci, nightly int) int {
	v := os.Getenv(Env)
	if v == "nightly" {
		return nightly
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return n
	}
	return ci
}
