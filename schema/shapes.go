package schema

import (
	"reflect"
	"sync"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// Shape is what reflection cannot see of a contract type: the values of an
// enumeration, the members of a tagged union, or that a value is a number
// or a string. The generator writes it into the type's schema definition;
// the types themselves carry no schema code, so the binary links no schema
// generator.
type Shape struct {
	// Type is the JSON type of an enumeration ("string" or "integer").
	Type string
	// Enum lists an enumeration's values.
	Enum []any
	// OneOf names the definitions a tagged union is one of.
	OneOf []string
	// IntOrString is true for an id or a token: an integer or a string.
	IntOrString bool
}

func enum[T ~string](values ...T) Shape {
	s := Shape{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, string(v))
	}
	return s
}

// Shapes returns the map of contract types to their shapes, built on first
// use (only the generator and tests need it, so the binary's start does not
// build it). Callers must not modify it.
var Shapes = sync.OnceValue(func() map[reflect.Type]Shape {
	return map[reflect.Type]Shape{
		reflect.TypeFor[RequestID]():             {IntOrString: true},
		reflect.TypeFor[ProgressToken]():         {IntOrString: true},
		reflect.TypeFor[MessageType]():           {Type: "integer", Enum: []any{1, 2, 3, 4}},
		reflect.TypeFor[CompactionTrigger]():     enum(core.CompactionTriggers...),
		reflect.TypeFor[CompactionCause]():       enum(core.CompactionCauses...),
		reflect.TypeFor[RestoreMode]():           enum(core.RestoreModes...),
		reflect.TypeFor[ResumeRequestMode]():     enum(ResumeFresh),
		reflect.TypeFor[SessionStatus]():         enum(StatusLive, StatusSuspended, StatusEnded, StatusIdle),
		reflect.TypeFor[CompactedBy]():           enum(CompactedByHarness, CompactedByBridge),
		reflect.TypeFor[Provenance]():            enum(checkpoint.Provenances...),
		reflect.TypeFor[CheckpointMethod]():      enum(core.CheckpointMethods...),
		reflect.TypeFor[CheckpointReason]():      enum(checkpoint.Reasons...),
		reflect.TypeFor[CheckpointSuppression](): enum(checkpoint.Suppressions...),
		reflect.TypeFor[InjectMode]():            enum(InjectGoal, InjectPrompt, InjectBoth),
		reflect.TypeFor[ErrorCode]():             enum(core.Codes...),
		reflect.TypeFor[CapabilityNeed]():        enum(NeedRequired, NeedOptional, NeedNotApplicable),
		reflect.TypeFor[PermissionOptionKind]():  enum(core.ApprovalOptionKinds...),
		reflect.TypeFor[DecidedBy]():             enum(core.Deciders...),
		reflect.TypeFor[PermissionOutcomeKind](): enum(OutcomeSelected, OutcomeCancelled),
		reflect.TypeFor[ExportFormat]():          enum(ExportMarkdown, ExportJSON),
		reflect.TypeFor[UsageGroupBy]():          enum(core.UsageBySession, core.UsageByHarness, core.UsageByModel, core.UsageByDay),
		reflect.TypeFor[Content]():               {OneOf: []string{"TextContent", "ImageContent"}},
		reflect.TypeFor[WorkDoneProgress](): {OneOf: []string{"WorkDoneProgressBegin", "WorkDoneProgressReport",
			"WorkDoneProgressEnd"}},
	}
})
