package adaptertest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Request-shape comparison: an ordinary turn's model request through
// Bridge against the same turn in the harness's own automation mode
// (docs/checkpoints.md, Ordinary turns). Ids and paths differ between any
// two runs and are normalised; everything else is compared leaf by leaf.

var (
	shapeUUID = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	shapeHex  = regexp.MustCompile(`[0-9a-f]{32,64}`)
	// OpenCode's ids (ses_…, msg_…, prt_…, call_…) and DSH's.
	shapeID = regexp.MustCompile(`\b(ses|msg|prt|call|session|toolu)[_-][0-9A-Za-z_-]{8,}`)
)

// ShapeLeaves lists every leaf of a decoded JSON value as path -> value;
// an array member with a "name" or a "function.name" (a tool) is one leaf
// keyed by that name, so that tools compare by name whatever their order
// (a member of a "tools" array without a name is keyed by its "type").
// Each replacement pair (from, to) is applied to every string first (a
// temporary folder's path, say), then ids are normalised.
func ShapeLeaves(v any, replace ...string) map[string]string {
	out := map[string]string{}
	shapeLeaves("", v, out, replace)
	return out
}

func shapeLeaves(prefix string, v any, out map[string]string, replace []string) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			shapeLeaves(prefix+"."+k, y, out, replace)
		}
	case []any:
		for i, y := range x {
			if m, ok := y.(map[string]any); ok {
				n, _ := m["name"].(string)
				if f, ok := m["function"].(map[string]any); ok && n == "" {
					n, _ = f["name"].(string)
				}
				if n == "" && strings.HasSuffix(prefix, ".tools") {
					n, _ = m["type"].(string) // a built-in tool (Codex's web_search)
				}
				if n != "" {
					b, _ := json.Marshal(m)
					out[prefix+"["+n+"]"] = normaliseShape(string(b), replace)
					continue
				}
			}
			shapeLeaves(fmt.Sprintf("%s[%d]", prefix, i), y, out, replace)
		}
	default:
		out[prefix] = normaliseShape(fmt.Sprint(x), replace)
	}
}

func normaliseShape(s string, replace []string) string {
	for i := 0; i+1 < len(replace); i += 2 {
		if replace[i] != "" {
			s = regexpReplaceAll(s, replace[i], replace[i+1])
		}
	}
	s = shapeUUID.ReplaceAllString(s, "<uuid>")
	s = shapeID.ReplaceAllString(s, "<id>")
	return shapeHex.ReplaceAllString(s, "<hex>")
}

func regexpReplaceAll(s, from, to string) string {
	return regexp.MustCompile(regexp.QuoteMeta(from)).ReplaceAllLiteralString(s, to)
}

// ShapeDiff lists, sorted, where two requests' leaves differ: "bridge
// only: PATH", "other only: PATH", "differs: PATH".
func ShapeDiff(bridge, other map[string]string) []string {
	var out []string
	for k, v := range bridge {
		if w, ok := other[k]; !ok {
			out = append(out, "bridge only: "+k)
		} else if v != w {
			out = append(out, "differs: "+k+": bridge "+clipShape(v)+" | other "+clipShape(w))
		}
	}
	for k := range other {
		if _, ok := bridge[k]; !ok {
			out = append(out, "other only: "+k)
		}
	}
	sort.Strings(out)
	return out
}

func clipShape(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
