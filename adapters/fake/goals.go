package fake

import (
	"context"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// CreateGoal stores an active goal and returns its id.
func (l *Live) CreateGoal(ctx context.Context, g core.Goal) (string, error) {
	if err := l.h.refuse(core.CapGoalCreate); err != nil {
		return "", err
	}
	if strings.TrimSpace(g.Text) == "" {
		return "", core.Errorf(core.CodeInvalid, "fake: a goal needs text")
	}
	if err := l.alive(); err != nil {
		return "", err
	}
	var id string
	err := l.h.update(l.id, func(r *record) error {
		id = fmt.Sprintf("goal-%d", len(r.Goals)+1)
		r.Goals = append(r.Goals, GoalState{ID: id, Text: g.Text, Rounds: g.Rounds, Status: "active"})
		return nil
	})
	return id, err
}

// PauseGoal pauses a goal; with Options.GoalPauseFails it fails with a
// core.CodeHarness error and changes nothing.
func (l *Live) PauseGoal(ctx context.Context, goalID string) error {
	if err := l.h.refuse(core.CapGoalPause); err != nil {
		return err
	}
	if l.h.opts.GoalPauseFails {
		return core.Errorf(core.CodeHarness, "fake: pausing goal %s failed (Options.GoalPauseFails)", goalID)
	}
	return l.setGoal(goalID, "paused")
}

// ClearGoal clears a goal.
func (l *Live) ClearGoal(ctx context.Context, goalID string) error {
	if err := l.h.refuse(core.CapGoalClear); err != nil {
		return err
	}
	return l.setGoal(goalID, "cleared")
}

func (l *Live) setGoal(goalID, status string) error {
	if err := l.alive(); err != nil {
		return err
	}
	return l.h.update(l.id, func(r *record) error {
		for i := range r.Goals {
			if r.Goals[i].ID == goalID {
				r.Goals[i].Status = status
				return nil
			}
		}
		return core.NotFound("fake goal", goalID)
	})
}
