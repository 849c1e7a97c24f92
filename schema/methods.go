package schema

import "sort"

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
}

func req(name string, dir Direction, params, result any, doc string) Method {
	return Method{Name: name, Direction: dir, Kind: Request, Params: params, Result: result, Doc: doc}
}

func note(name string, dir Direction, params any, doc string) Method {
	return Method{Name: name, Direction: dir, Kind: Notification, Params: params, Doc: doc}
}

func host(capability string, params, result any, doc string) Method {
	m := req("host/"+capability, ServerToClient, params, result, doc)
	m.Capability = capability
	return m
}

// Methods is the contract's single method table: the rpc layer dispatches
// from it and the generator writes the schema and TypeScript from it.
// Callers must not modify it.
var Methods = []Method{
	// LSP lifecycle and base protocol.
	req("initialize", ClientToServer, InitializeParams{}, InitializeResult{}, "Open the session; the first request."),
	note("initialized", ClientToServer, InitializedParams{}, "The client received the initialize result."),
	req("shutdown", ClientToServer, nil, nil, "Stop serving; exit follows."),
	note("exit", ClientToServer, nil, "End the process (code 0 after shutdown, 1 otherwise)."),
	note("$/cancelRequest", Both, CancelParams{}, "Cancel a request; it is answered with -32800."),
	note("$/progress", Both, ProgressParams{}, "Progress of long work, by token."),
	note("window/showMessage", ServerToClient, ShowMessageParams{}, "Show a message to the user."),
	note("window/logMessage", ServerToClient, LogMessageParams{}, "Log a message."),
	req("window/workDoneProgress/create", ServerToClient, WorkDoneProgressCreateParams{}, nil, "Create a progress token."),
	note("window/workDoneProgress/cancel", ClientToServer, WorkDoneProgressCancelParams{}, "Cancel the request a cancellable progress reports on; it is answered with -32800."),

	// Bridge methods.
	req("bridge/doctor", ClientToServer, DoctorParams{}, DoctorResult{}, "Capability report per adapter."),
	req("session/list", ClientToServer, SessionListParams{}, SessionListResult{}, "Page the sessions Bridge knows."),
	req("session/create", ClientToServer, SessionCreateParams{}, SessionCreateResult{}, "Start a session."),
	req("session/prompt", ClientToServer, SessionPromptParams{}, SessionPromptResult{}, "Run one turn; entries stream as session/update."),
	req("session/cancel", ClientToServer, SessionCancelParams{}, SessionCancelResult{}, "Interrupt the running turn."),
	req("session/rename", ClientToServer, SessionRenameParams{}, SessionRenameResult{}, "Rename a session."),
	req("session/archive", ClientToServer, SessionArchiveParams{}, SessionArchiveResult{}, "Archive a session."),
	req("session/history", ClientToServer, SessionHistoryParams{}, SessionHistoryResult{}, "Page the record backwards."),
	req("session/resume", ClientToServer, SessionResumeParams{}, SessionResumeResult{}, "Resume a session and report the mode."),
	req("session/compact", ClientToServer, SessionCompactParams{}, SessionCompactResult{}, "Forward /compact or fall back to a checkpoint."),
	req("session/checkpoint", ClientToServer, SessionCheckpointParams{}, SessionCheckpointResult{}, "Write a Bridge checkpoint now."),
	req("session/import", ClientToServer, SessionImportParams{}, SessionImportResult{}, "Bring a harness transcript into the record."),
	req("session/search", ClientToServer, SessionSearchParams{}, SessionSearchResult{}, "Search the text of every session, best hits first."),
	req("migration/preview", ClientToServer, MigrationPreviewParams{}, MigrationPreviewResult{}, "Write an editable five-part handoff."),
	req("migration/execute", ClientToServer, MigrationExecuteParams{}, MigrationExecuteResult{}, "Run a previewed migration."),

	// Notifications from Bridge.
	note("session/update", ServerToClient, SessionUpdateNotification{}, "A new entry was recorded."),
	note("session/contextCompacted", ServerToClient, ContextCompactedNotification{}, "The harness compacted its window."),
	note("session/checkpointSaved", ServerToClient, CheckpointSavedNotification{}, "A Bridge checkpoint was committed."),
	note("session/restored", ServerToClient, RestoredNotification{}, "A session came back, in this mode."),

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
}

var methodIndex = func() map[string]int {
	idx := make(map[string]int, len(Methods))
	for i, m := range Methods {
		idx[m.Name] = i
	}
	return idx
}()

// MethodByName returns the row named name.
func MethodByName(name string) (Method, bool) {
	i, ok := methodIndex[name]
	if !ok {
		return Method{}, false
	}
	return Methods[i], true
}

// Names returns, sorted, the names of the rows with kind k sent in
// direction d (a row sent in Both directions matches either).
func Names(d Direction, k Kind) []string {
	var out []string
	for _, m := range Methods {
		if m.Kind == k && (m.Direction == d || m.Direction == Both) {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}
