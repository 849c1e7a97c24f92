// Package webui holds the built WebUI (dist/, made from src/ by esbuild;
// `node build.mjs` rebuilds it) for `bridge web` to embed, so the binary
// serves it without Node.
package webui

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// Assets are the WebUI's static files, index.html at the root.
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time
	}
	return sub
}
