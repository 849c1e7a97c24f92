// Package schema is Bridge's client contract: the Go types of every JSON-RPC
// method and notification a client and Bridge exchange (ARCHITECTURE.md, The client contract), the
// method table that ties each name to its params and result types, and the
// generator that turns those types into JSON Schema files.
//
// Start with Methods (the single table the rpc layer dispatches from) and
// MethodByName. Generate writes the JSON Schema files into a directory;
// WriteBundle writes the one-file bundle that `bridge schema` prints.
//
// Rules for the contract, short as they are:
//
//   - Field names are camelCase on the wire; ids are strings (JSON-RPC request
//     ids and progress tokens are numbers or strings).
//   - Shapes are fixed: add fields freely, never rename or remove one.
//   - Params types end in Params, results in Result, notifications in
//     Notification (LSP base types keep their LSP names).
//   - An optional field carries omitempty (or omitzero); every other field is
//     required in the schema.
//   - Unions are tagged by one member (`type` for Content, `kind` for
//     progress values) and appear in the schema as oneOf with the tag as a
//     const.
//   - Doc comments on the types in types_*.go become the schema descriptions;
//     change them, then run `go generate ./schema`.
//
// The generated files live in schema/json/ and clients/typescript/src/; a
// test fails when they are stale.
package schema

//go:generate go run ./gen -out json -doc ../docs/protocol.md
//go:generate node ../clients/typescript/gen.mjs
