package core

import "context"

// Steerer is implemented by live sessions whose harness can take a user
// message into the turn that is running (capability prompt.steer): Claude
// Code reads another user line on its stream-json input mid-turn, Codex's
// app-server has turn/steer. Steer returns once the harness accepted the
// message; what the turn does with it is reported through the sink as
// usual. With no turn running it returns an error with CodeInvalid.
type Steerer interface {
	Steer(ctx context.Context, content []Content) error
}
