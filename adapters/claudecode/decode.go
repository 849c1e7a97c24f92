package claudecode

import jsonv1 "github.com/go-json-experiment/json/v1"

// unmarshal decodes a transcript line or a content member on the import
// path. It is encoding/json's Unmarshal as reimplemented over the JSON v2
// decoder (the same semantics: case-insensitive names, duplicate names and
// invalid UTF-8 accepted, RawMessage members copied), which decodes in one
// pass instead of validating first and then decoding: about half the CPU
// per line of a conversation transcript. Callers use only whether it
// failed, never the error's text.
func unmarshal(data []byte, v any) error {
	return jsonv1.Unmarshal(data, v)
}
