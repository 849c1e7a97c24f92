package handoff

import "strings"

// modelRoutes is the table of how a model id crosses from one harness to
// another, per harness pair (source, target). Each harness names models
// its own way: Claude Code and Codex by the bare model id of their one
// provider (Anthropic, OpenAI); OpenCode as "<provider>/<model>" with
// models.dev's provider ids; DeepSeek Harness as "<provider>/<model>" with
// its own route ids. A pair not in the table shares no provider, so its
// models do not cross.
var modelRoutes = map[[2]string]func(model string) (string, bool){
	{"claude-code", "opencode"}: prefix("anthropic/"),
	{"opencode", "claude-code"}: unprefix("anthropic/"),
	{"codex", "opencode"}:       prefix("openai/"),
	{"opencode", "codex"}:       unprefix("openai/"),
	{"dsh", "opencode"}:         swap("deepseek-official/", "deepseek/"),
	{"opencode", "dsh"}:         swap("deepseek/", "deepseek-official/"),
}

func prefix(p string) func(string) (string, bool) {
	return func(m string) (string, bool) {
		if strings.Contains(m, "/") {
			return "", false
		}
		return p + m, true
	}
}

func unprefix(p string) func(string) (string, bool) {
	return func(m string) (string, bool) {
		rest, ok := strings.CutPrefix(m, p)
		if !ok || rest == "" || strings.Contains(rest, "/") {
			return "", false
		}
		return rest, true
	}
}

func swap(from, to string) func(string) (string, bool) {
	return func(m string) (string, bool) {
		rest, ok := strings.CutPrefix(m, from)
		if !ok || rest == "" {
			return "", false
		}
		return to + rest, true
	}
}

// CarryModel maps the source's model id (with its provider, where the
// harness names one) to the target harness's name for the same model:
// unchanged within one harness, by the pair's table across harnesses. It
// reports false when the model does not cross (no route for the pair, or
// a provider the target cannot reach).
func CarryModel(from, to, model string) (string, bool) {
	if model == "" {
		return "", false
	}
	if from == to {
		return model, true
	}
	if route, ok := modelRoutes[[2]string{from, to}]; ok {
		return route(model)
	}
	return "", false
}
