package checkpoint

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// ownerState is a session where Bridge solely owns a window that is full:
// every reason fires in it unless a suppression applies.
func ownerState() State {
	return State{MeaningfulWork: true, HasGauge: true, GaugeUsed: 190_000, GaugeSize: 200_000, ResponseReserve: 16_000}
}

func TestDecideReasonsBySuppression(t *testing.T) {
	suppressions := []struct {
		rule Suppression
		set  func(*State)
	}{
		{SuppressedWorkerDone, func(s *State) { s.WorkerDone = true }},
		{SuppressedToolInFlight, func(s *State) { s.ToolInFlight = true }},
		{SuppressedApproval, func(s *State) { s.ApprovalPending = true }},
		{SuppressedNoWork, func(s *State) { s.MeaningfulWork = false }},
	}
	type row struct {
		name   string
		reason Reason
		state  State
		fire   bool
		rule   Suppression
	}
	var rows []row
	for _, r := range Reasons {
		rows = append(rows, row{name: fmt.Sprintf("%s/none", r), reason: r, state: ownerState(), fire: true})
		for _, sp := range suppressions {
			s := ownerState()
			sp.set(&s)
			rows = append(rows, row{name: fmt.Sprintf("%s/%s", r, sp.rule), reason: r, state: s, rule: sp.rule})
		}
		// Suppressions are checked in DESIGN's order: with all four set,
		// the first one wins; with the last three, the second.
		all := ownerState()
		for _, sp := range suppressions {
			sp.set(&all)
		}
		rows = append(rows, row{name: fmt.Sprintf("%s/all", r), reason: r, state: all, rule: SuppressedWorkerDone})
		three := all
		three.WorkerDone = false
		rows = append(rows, row{name: fmt.Sprintf("%s/order", r), reason: r, state: three, rule: SuppressedToolInFlight})

		// A dead process's rebuild: a tool left open is not in flight, the
		// other suppressions still apply.
		dead := ownerState()
		dead.ToolInFlight, dead.Dead = true, true
		rows = append(rows, row{name: fmt.Sprintf("%s/dead_tool_open", r), reason: r, state: dead, fire: true})
		deadApproval := dead
		deadApproval.ApprovalPending = true
		rows = append(rows, row{name: fmt.Sprintf("%s/dead_approval", r), reason: r, state: deadApproval, rule: SuppressedApproval})

		// A direct chat never auto-compacts; manual still fires.
		dc := ownerState()
		dc.DirectChat = true
		if r == ReasonManual {
			rows = append(rows, row{name: fmt.Sprintf("%s/direct_chat", r), reason: r, state: dc, fire: true})
		} else {
			rows = append(rows, row{name: fmt.Sprintf("%s/direct_chat", r), reason: r, state: dc, rule: SuppressedDirectChat})
		}

		// Ownership: window reasons need a gauge and no own compaction;
		// the other reasons do not care.
		noGauge := ownerState()
		noGauge.HasGauge = false
		own := ownerState()
		own.OwnCompaction = true
		if r == ReasonContextPressure || r == ReasonResponseReserve {
			rows = append(rows,
				row{name: fmt.Sprintf("%s/no_gauge", r), reason: r, state: noGauge, rule: SuppressedNoGauge},
				row{name: fmt.Sprintf("%s/own_compaction", r), reason: r, state: own, rule: SuppressedNotOwner})
		} else {
			rows = append(rows,
				row{name: fmt.Sprintf("%s/no_gauge", r), reason: r, state: noGauge, fire: true},
				row{name: fmt.Sprintf("%s/own_compaction", r), reason: r, state: own, fire: true})
		}
	}

	// Gauge thresholds.
	gauge := func(used, size, reserve int64) State {
		s := ownerState()
		s.GaugeUsed, s.GaugeSize, s.ResponseReserve = used, size, reserve
		return s
	}
	rows = append(rows,
		row{name: "pressure/exactly 75%", reason: ReasonContextPressure, state: gauge(150_000, 200_000, 0), fire: true},
		row{name: "pressure/just below 75%", reason: ReasonContextPressure, state: gauge(149_999, 200_000, 0), rule: SuppressedBelowThreshold},
		row{name: "pressure/zero window", reason: ReasonContextPressure, state: gauge(10, 0, 0), rule: SuppressedNoGauge},
		row{name: "reserve/used+reserve reaches window", reason: ReasonResponseReserve, state: gauge(184_000, 200_000, 16_000), fire: true},
		row{name: "reserve/one token short", reason: ReasonResponseReserve, state: gauge(183_999, 200_000, 16_000), rule: SuppressedBelowThreshold},
		row{name: "reserve/low pressure but big reserve", reason: ReasonResponseReserve, state: gauge(100_000, 200_000, 120_000), fire: true},
		row{name: "unknown reason", reason: "warm_idle_timeout", state: ownerState(), rule: SuppressedUnknownReason},
	)

	if n := len(rows); n < 8*(1+4) {
		t.Fatalf("table has only %d rows", n)
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.reason, tt.state)
			if d.Fire != tt.fire || d.Suppressed != tt.rule {
				t.Fatalf("Decide = fire %v suppressed %q (%s); want fire %v suppressed %q", d.Fire, d.Suppressed, d.Detail, tt.fire, tt.rule)
			}
			if d.Reason != tt.reason || d.Detail == "" {
				t.Errorf("decision %+v lacks reason or detail", d)
			}
		})
	}
}

func TestBranchActivity(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *branchBuilder)
		want  Activity
	}{
		{"empty branch", func(b *branchBuilder) {}, Activity{BoundaryIndex: -1}},
		{"tool in flight", func(b *branchBuilder) {
			b.user("go")
			b.toolStart("t1")
			b.toolStart("t2")
			b.toolDone("t1")
		}, Activity{BoundaryIndex: -1, ToolsInFlight: []string{"t2"}, MeaningfulWork: true}},
		{"completion with another id does not close", func(b *branchBuilder) {
			b.toolStart("t1")
			b.toolDone("t9")
		}, Activity{BoundaryIndex: -1, ToolsInFlight: []string{"t1"}, MeaningfulWork: true}},
		{"approval pending then resolved", func(b *branchBuilder) {
			b.add(core.KindApprovalRequested, map[string]any{"approvalId": "a1"})
			b.add(core.KindApprovalRequested, map[string]any{"approvalId": "a2"})
			b.add(core.KindApprovalResolved, map[string]any{"approvalId": "a1"})
		}, Activity{BoundaryIndex: -1, ApprovalsPending: []string{"a2"}}},
		{"a failed exchange is not work", func(b *branchBuilder) {
			b.commit(validCP("S"), "")
			b.add(core.KindCompactionRequest, Request{Reason: ReasonContextPressure})
			b.user("Bridge checkpoint request")
			b.assistant("no json")
			b.add(core.KindCompactionRequest, Request{Reason: ReasonContextPressure, Attempt: 1})
			b.user("repair")
			b.assistant("still no json")
			b.add(core.KindCompactionFailed, map[string]any{"reason": "context_pressure"})
		}, Activity{BoundaryIndex: 1}},
		{"chat after a request whose process died is work", func(b *branchBuilder) {
			b.commit(validCP("S"), "")
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.user("after restart")
			b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
			b.add(core.KindCompactionFailed, map[string]any{"reason": "manual"})
		}, Activity{BoundaryIndex: 1, MeaningfulWork: true}},
		{"work ending with a completed worker result: worker done", func(b *branchBuilder) {
			b.user("review it")
			b.toolDone("task")
			b.add(core.KindWorkerResult, map[string]any{"status": "completed", "result": "nothing to change"})
			b.add(core.KindSessionStatus, map[string]any{"status": "turn_completed"})
		}, Activity{BoundaryIndex: -1, MeaningfulWork: true, WorkerDone: true}},
		{"work after the worker result: not done", func(b *branchBuilder) {
			b.add(core.KindWorkerResult, map[string]any{"status": "completed"})
			b.assistant("the reviewer found nothing; next I will ship")
		}, Activity{BoundaryIndex: -1, MeaningfulWork: true}},
		{"a failed worker is not done", func(b *branchBuilder) {
			b.add(core.KindWorkerResult, map[string]any{"status": "failed"})
		}, Activity{BoundaryIndex: -1, MeaningfulWork: true}},
		{"only after the boundary; no work since", func(b *branchBuilder) {
			b.user("go")
			b.toolStart("old") // the process died; a reconstruction closed the span
			b.commit(validCP("S"), "")
			b.add(core.KindContextUsage, map[string]any{"used": 5})
		}, Activity{BoundaryIndex: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBranch()
			tt.build(b)
			got := BranchActivity(b.entries)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v want %+v", got, tt.want)
			}
		})
	}
	// Apply feeds Decide.
	b := newBranch()
	b.user("go")
	b.toolStart("t1")
	if d := Decide(ReasonManual, BranchActivity(b.entries).Apply(State{})); d.Suppressed != SuppressedToolInFlight {
		t.Errorf("Decide from activity = %+v", d)
	}
}
