package dsh

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// CreateGoal (goal.create) sets the session's goal.
func (l *live) CreateGoal(ctx context.Context, g core.Goal) (string, error) {
	if err := l.ensureOpen("goal.create"); err != nil {
		return "", err
	}
	rounds := g.Rounds
	if rounds <= 0 {
		rounds = 1
	}
	var res struct {
		Ref goalRef `json:"ref"`
	}
	if err := l.h.rpc.call(ctx, "goal.create", goalCreateArgs{SessionID: l.id, Objective: g.Text, MaxGoalRounds: rounds}, &res); err != nil {
		return "", err
	}
	if res.Ref.ID == "" {
		return "", core.Errorf(core.CodeHarness, "dsh goal.create returned no goal ref")
	}
	l.remember(res.Ref)
	return res.Ref.ID, nil
}

// PauseGoal (goal.pause) pauses the goal at its current revision.
func (l *live) PauseGoal(ctx context.Context, goalID string) error {
	return l.goalOp(ctx, "goal.pause", goalID)
}

// ClearGoal (goal.clear) clears the goal at its current revision.
func (l *live) ClearGoal(ctx context.Context, goalID string) error {
	return l.goalOp(ctx, "goal.clear", goalID)
}

func (l *live) remember(r goalRef) {
	l.goalMu.Lock()
	l.goals[r.ID] = r.Revision
	l.goalMu.Unlock()
}

// goalOp calls a goal method with the goal's revision. DSH refuses a stale
// revision (GOAL_STALE_REVISION: a goal round may have moved it on): the
// revision is re-read from the session once and the call retried once.
func (l *live) goalOp(ctx context.Context, method, goalID string) error {
	if err := l.ensureOpen(method); err != nil {
		return err
	}
	l.goalMu.Lock()
	rev, known := l.goals[goalID]
	l.goalMu.Unlock()
	if !known {
		r, err := l.currentRevision(ctx, goalID, nil)
		if err != nil {
			return err
		}
		rev = r
	}
	var stale error
	for attempt := 0; attempt < 2; attempt++ {
		var res struct {
			Ref goalRef `json:"ref"`
		}
		err := l.h.rpc.call(ctx, method, goalRefArgs{SessionID: l.id, Ref: goalRef{ID: goalID, Revision: rev}}, &res)
		if err == nil {
			if res.Ref.ID != "" {
				l.remember(res.Ref)
			}
			return nil
		}
		re := rpcErr(err)
		if re == nil || re.GoalCode() != goalStale {
			return err
		}
		stale = err
		if attempt == 1 {
			break
		}
		if rev, err = l.currentRevision(ctx, goalID, re); err != nil {
			return fmt.Errorf("%s: re-reading the goal revision after %v: %w", method, stale, err)
		}
	}
	return core.E(core.CodeConflict, fmt.Sprintf("dsh %s: goal %s is still at a newer revision after one re-read and retry", method, goalID), stale)
}

var staleCurrent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`current is "([^"]*)" revision (\d+)`) })

// currentRevision reads the goal's current revision: the newest goal/change
// event for it, else the goal projection, else the revision DSH named in
// its stale error.
func (l *live) currentRevision(ctx context.Context, goalID string, stale *RPCError) (int64, error) {
	evs, proj, err := l.h.readSince(ctx, l.id, -1)
	if err != nil {
		return 0, err
	}
	rev := int64(-1)
	for _, ev := range evs {
		if ev.Type != "goal/change" {
			continue
		}
		var d struct {
			Goal    *goalRef `json:"goal"`
			Cleared *goalRef `json:"cleared"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			continue
		}
		for _, r := range []*goalRef{d.Goal, d.Cleared} {
			if r != nil && r.ID == goalID {
				rev = r.Revision
			}
		}
	}
	if rev < 0 && proj.Values.Goal != nil && proj.Values.Goal.Goal != nil && proj.Values.Goal.Goal.ID == goalID {
		rev = proj.Values.Goal.Goal.Revision
	}
	if rev < 0 && stale != nil {
		if m := staleCurrent().FindStringSubmatch(stale.Message); m != nil && m[1] == goalID {
			rev, _ = strconv.ParseInt(m[2], 10, 64)
		}
	}
	if rev < 0 {
		return 0, core.NotFound("dsh goal", goalID)
	}
	return rev, nil
}

// compactNote says why a focus is not applied.
