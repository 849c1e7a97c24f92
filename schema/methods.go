package schema

import (
	"context"
	"sort"
	"sync"
)

// Direction says who sends a message.
type Direction int

// Directions.
const (
	// ClientToServer: the client sends, Bridge answers or receives.
	ClientToServer Direction = iota + 1
	// ServerToClient: Bridge sends, the client answers or receives.
	ServerToClient
	// Both: either side may send ($/cancelRequest, $/progress).
	Both
)

// String returns "clientToServer", "serverToClient" or "both".
func (d Direction) String() string {
	switch d {
	case ClientToServer:
		return "clientToServer"
	case ServerToClient:
		return "serverToClient"
	case Both:
		return "both"
	}
	return "unknown"
}

// Kind says whether a message expects a reply.
type Kind int

// Kinds.
const (
	// Request expects a result or an error.
	Request Kind = iota + 1
	// Notification expects nothing.
	Notification
)

// String returns "request" or "notification".
func (k Kind) String() string {
	switch k {
	case Request:
		return "request"
	case Notification:
		return "notification"
	}
	return "unknown"
}

// Method is one row of the contract: a method or notification name, who
// sends it, whether it is answered, and the zero values of its params and
// result types.
type Method struct {
	// Name is the wire name ("session/create").
	Name string
	// Direction says who sends it.
	Direction Direction
	// Kind says whether it is a request or a notification.
	Kind Kind
	// Params is the zero value of the params type (a struct, not a
	// pointer), or nil when the method takes no params.
	Params any
	// Result is the zero value of the result type, or nil when the result
	// is null (and always for notifications).
	Result any
	// Capability is the host capability a host/* request needs (doctor's
	// spelling), "" for every other method.
	Capability string
	// Doc says what the method does, in one line.
	Doc string
	// Progress is the $/progress title of a client request that reports
	// work-done progress when its params carry a workDoneToken; "" when it
	// does not.
	Progress string
	// Call runs a client request on a Backend with decoded params (a value
	// of the Params type); nil for every row the rpc server answers itself
	// and for every row it does not answer.
	Call func(ctx context.Context, b Backend, params any) (any, error)
}

func req(name string, dir Direction, params, result any, doc string) Method {
	return Method{Name: name, Direction: dir, Kind: Request, Params: params, Result: result, Doc: doc}
}

// call is a client request served by a Backend method: fn is a method
// expression such as Backend.SessionList, so the row, the params and result
// types and the Backend method cannot disagree.
func call[P, R any](name string, fn func(Backend, context.Context, P) (R, error), progress, doc string) Method {
	var p P
	var r R
	m := req(name, ClientToServer, p, r, doc)
	m.Progress = progress
	m.Call = func(ctx context.Context, b Backend, params any) (any, error) { return fn(b, ctx, params.(P)) }
	return m
}

func note(name string, dir Direction, params any, doc string) Method {
	return Method{Name: name, Direction: dir, Kind: Notification, Params: params, Doc: doc}
}

// Notice is a notification's wire name bound to its params type, as call
// binds a request's name to its Backend method: a sender that takes a
// Notice[P] sends that notification with P and nothing else, and the
// method table's row is built from the same value.
type Notice[P any] struct {
	// Name is the wire name ("session/update").
	Name string
}

// The notifications Bridge sends, each bound to its params type.
var (
	NoticeSessionUpdate    = Notice[SessionUpdateNotification]{"session/update"}
	NoticeContextCompacted = Notice[ContextCompactedNotification]{"session/contextCompacted"}
	NoticeCheckpointSaved  = Notice[CheckpointSavedNotification]{"session/checkpointSaved"}
	NoticeRestored         = Notice[RestoredNotification]{"session/restored"}
	NoticeQueueChanged     = Notice[QueueChangedNotification]{"session/queueChanged"}
	NoticeSessionChanged   = Notice[SessionChangedNotification]{"session/changed"}
	NoticeLogMessage       = Notice[LogMessageParams]{"window/logMessage"}
	NoticeShowMessage      = Notice[ShowMessageParams]{"window/showMessage"}
	NoticeProgress         = Notice[ProgressParams]{"$/progress"}
	NoticeCancelRequest    = Notice[CancelParams]{"$/cancelRequest"}
)

// notice is the row of a bound notification.
func notice[P any](n Notice[P], dir Direction, doc string) Method {
	var p P
	return note(n.Name, dir, p, doc)
}

func host(capability string, params, result any, doc string) Method {
	m := req("host/"+capability, ServerToClient, params, result, doc)
	m.Capability = capability
	return m
}

// Backend serves the client requests of the table, one Go method per row,
// named after the wire method ("session/list" is SessionList), taking the
// row's params type and returning its result type. *service.Service
// implements it; the rpc server dispatches to it from Methods.
type Backend interface {
	BridgeDoctor(ctx context.Context, p DoctorParams) (DoctorResult, error)
	SessionList(ctx context.Context, p SessionListParams) (SessionListResult, error)
	SessionCreate(ctx context.Context, p SessionCreateParams) (SessionCreateResult, error)
	SessionPrompt(ctx context.Context, p SessionPromptParams) (SessionPromptResult, error)
	SessionCancel(ctx context.Context, p SessionCancelParams) (SessionCancelResult, error)
	SessionRename(ctx context.Context, p SessionRenameParams) (SessionRenameResult, error)
	SessionArchive(ctx context.Context, p SessionArchiveParams) (SessionArchiveResult, error)
	SessionHistory(ctx context.Context, p SessionHistoryParams) (SessionHistoryResult, error)
	SessionResume(ctx context.Context, p SessionResumeParams) (SessionResumeResult, error)
	SessionCompact(ctx context.Context, p SessionCompactParams) (SessionCompactResult, error)
	SessionCheckpoint(ctx context.Context, p SessionCheckpointParams) (SessionCheckpointResult, error)
	SessionSuspend(ctx context.Context, p SessionSuspendParams) (SessionSuspendResult, error)
	SessionImport(ctx context.Context, p SessionImportParams) (SessionImportResult, error)
	SessionModels(ctx context.Context, p SessionModelsParams) (SessionModelsResult, error)
	SessionSelectModel(ctx context.Context, p SessionSelectModelParams) (SessionSelectModelResult, error)
	HostedRequestPermission(ctx context.Context, p HostedRequestPermissionParams) (HostedRequestPermissionResult, error)
	SessionSearch(ctx context.Context, p SessionSearchParams) (SessionSearchResult, error)
	SessionExport(ctx context.Context, p SessionExportParams) (SessionExportResult, error)
	SessionFork(ctx context.Context, p SessionForkParams) (SessionForkResult, error)
	MigrationPreview(ctx context.Context, p MigrationPreviewParams) (MigrationPreviewResult, error)
	MigrationExecute(ctx context.Context, p MigrationExecuteParams) (MigrationExecuteResult, error)
	SessionQueue(ctx context.Context, p SessionQueueParams) (SessionQueueResult, error)
	SessionWithdraw(ctx context.Context, p SessionWithdrawParams) (SessionWithdrawResult, error)
	SessionUsage(ctx context.Context, p SessionUsageParams) (SessionUsageResult, error)
	SessionDiff(ctx context.Context, p SessionDiffParams) (SessionDiffResult, error)
}

// Methods returns the contract's single method table, built on first use
// (the first request, not before main): the rpc layer dispatches from it (a
// row with Call goes to the Backend), and the generator writes the schema
// and TypeScript from it. Adding a client request is its params
// and result types, one row here with its Backend method, and the service
// method that implements it. Callers must not modify it.
var Methods = sync.OnceValue(func() []Method {
	return []Method{
		// LSP lifecycle and base protocol.
		req("initialize", ClientToServer, InitializeParams{}, InitializeResult{}, "Open the session; the first request."),
		note("initialized", ClientToServer, InitializedParams{}, "The client received the initialize result."),
		req("shutdown", ClientToServer, nil, nil, "Stop serving; exit follows."),
		note("exit", ClientToServer, nil, "End the process (code 0 after shutdown, 1 otherwise)."),
		notice(NoticeCancelRequest, Both, "Cancel a request; it is answered with -32800."),
		notice(NoticeProgress, Both, "Progress of long work, by token."),
		notice(NoticeShowMessage, ServerToClient, "Show a message to the user."),
		notice(NoticeLogMessage, ServerToClient, "Log a message."),
		req("window/workDoneProgress/create", ServerToClient, WorkDoneProgressCreateParams{}, nil, "Create a progress token."),
		note("window/workDoneProgress/cancel", ClientToServer, WorkDoneProgressCancelParams{}, "Cancel the request a cancellable progress reports on; it is answered with -32800."),

		// Bridge methods: served by a Backend.
		call("bridge/doctor", Backend.BridgeDoctor, "", "Capability report per adapter."),
		call("session/list", Backend.SessionList, "", "Page the sessions Bridge knows."),
		call("session/create", Backend.SessionCreate, "", "Start a session."),
		call("session/prompt", Backend.SessionPrompt, "Prompt", "Run one turn; entries stream as session/update."),
		call("session/cancel", Backend.SessionCancel, "", "Interrupt the running turn."),
		call("session/rename", Backend.SessionRename, "", "Rename a session."),
		call("session/archive", Backend.SessionArchive, "", "Archive a session."),
		call("session/history", Backend.SessionHistory, "", "Page the record along the active branch: backwards, forwards, or around an entry."),
		call("session/resume", Backend.SessionResume, "", "Resume a session and report the mode."),
		call("session/compact", Backend.SessionCompact, "Compact", "Forward /compact or fall back to a checkpoint."),
		call("session/checkpoint", Backend.SessionCheckpoint, "Checkpoint", "Write a Bridge checkpoint now."),
		call("session/suspend", Backend.SessionSuspend, "", "Checkpoint a live session and stop its process; the next prompt brings it back."),
		call("session/import", Backend.SessionImport, "Import", "Bring a harness transcript into the record."),
		call("session/models", Backend.SessionModels, "", "List the models the session's harness offers."),
		call("session/selectModel", Backend.SessionSelectModel, "", "Switch a live session's model and/or effort."),
		call("session/search", Backend.SessionSearch, "", "Search the text of every session, best hits first."),
		call("session/export", Backend.SessionExport, "", "Render a session as Markdown or lossless JSON."),
		call("session/fork", Backend.SessionFork, "Fork", "Start a new session, on any harness, from a point of another."),
		call("session/queue", Backend.SessionQueue, "", "List the prompts waiting for the running turn to end."),
		call("session/withdraw", Backend.SessionWithdraw, "", "Take a queued prompt back before it runs."),
		call("session/diff", Backend.SessionDiff, "", "A session's changes since it started (or a checkpoint) as a unified diff with per-file stats."),
		call("session/usage", Backend.SessionUsage, "", "Sum what turns cost (tokens, cost) by session, harness, model or day."),
		call("migration/preview", Backend.MigrationPreview, "Migration preview", "Write an editable five-part handoff."),
		call("migration/execute", Backend.MigrationExecute, "Migration", "Run a previewed migration."),

		// Notifications from Bridge.
		notice(NoticeSessionUpdate, ServerToClient, "A new entry was recorded."),
		notice(NoticeContextCompacted, ServerToClient, "The harness compacted its window."),
		notice(NoticeCheckpointSaved, ServerToClient, "A Bridge checkpoint was committed."),
		notice(NoticeRestored, ServerToClient, "A session came back, in this mode."),
		notice(NoticeQueueChanged, ServerToClient, "A session's prompt queue changed."),
		notice(NoticeSessionChanged, ServerToClient, "A session's title, archive flag or active branch changed (here or in another process sharing the record)."),

		// Requests from Bridge to a client that declared capabilities.session.requestPermission.
		req("session/requestPermission", ServerToClient, SessionRequestPermissionParams{}, SessionRequestPermissionResult{},
			"Ask the user whether a harness may run a tool."),

		// Requests to a client that hosts sessions itself, and its events.
		host("probe", HostProbeParams{}, HostProbeResult{}, "Report the host's harness and capabilities without changing anything."),
		host("session.list", HostSessionListParams{}, HostSessionListResult{}, "List the host's sessions."),
		host("session.create", HostSessionCreateParams{}, HostSessionCreateResult{}, "Start a session on the host."),
		host("session.history", HostSessionHistoryParams{}, HostSessionHistoryResult{}, "Read the host's stored history of a session."),
		host("session.models", HostSessionModelsParams{}, HostSessionModelsResult{}, "List the models on offer."),
		host("session.selectModel", HostSelectModelParams{}, HostAck{}, "Switch a live session's model or effort."),
		host("session.prompt", HostSessionPromptParams{}, HostSessionPromptResult{}, "Run one turn on the host."),
		host("session.cancel", HostSessionParams{}, HostAck{}, "Interrupt the running turn."),
		host("session.rename", HostSessionRenameParams{}, HostAck{}, "Rename a session on the host."),
		host("session.close", HostSessionParams{}, HostAck{}, "Stop driving a live session; the host may end its process."),
		host("session.attachment", HostAttachmentParams{}, HostAttachmentResult{}, "Recover an image referenced in the host's history."),
		host("native.resume", HostSessionResumeParams{}, HostSessionResumeResult{}, "Resume the host's own stored session."),
		host("compaction.command", HostCompactParams{}, HostCompactResult{}, "Run the host's compaction command."),
		host("workspace.list", HostWorkspaceListParams{}, HostWorkspaceListResult{}, "List known working directories."),
		host("workspace.archiveSession", HostSessionParams{}, HostAck{}, "Archive a session on the host."),
		host("agentPreset.list", HostPresetListParams{}, HostPresetListResult{}, "List the presets usable with the host."),
		host("goal.create", HostGoalCreateParams{}, HostGoalCreateResult{}, "Give a live session a resumable goal."),
		host("goal.pause", HostGoalParams{}, HostAck{}, "Pause a goal."),
		host("goal.clear", HostGoalParams{}, HostAck{}, "Clear a goal."),
		note("host/event", ClientToServer, HostEventNotification{}, "An event of a live hosted session."),
		call("hosted/requestPermission", Backend.HostedRequestPermission, "", "Relay a hosted harness's permission request; Bridge decides."),
	}
})

// methodIndex maps names to rows of Methods, built on first use.
var methodIndex = sync.OnceValue(func() map[string]int {
	ms := Methods()
	idx := make(map[string]int, len(ms))
	for i, m := range ms {
		idx[m.Name] = i
	}
	return idx
})

// MethodByName returns the row named name.
func MethodByName(name string) (Method, bool) {
	i, ok := methodIndex()[name]
	if !ok {
		return Method{}, false
	}
	return Methods()[i], true
}

// Names returns, sorted, the names of the rows with kind k sent in
// direction d (a row sent in Both directions matches either).
func Names(d Direction, k Kind) []string {
	var out []string
	for _, m := range Methods() {
		if m.Kind == k && (m.Direction == d || m.Direction == Both) {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}
