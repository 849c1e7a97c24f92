#!/usr/bin/env bash
# Refreshes the WebUI's screenshots in docs/img/ (1280 and 390 px wide:
# the session view, an approval, a tool card with a diff, search and the
# doctor). They are taken by the browser tests themselves, against the real
# binary, Claude Code and the fake model server, when SCREENSHOTS is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p docs/img
SCREENSHOTS=1 go test ./clients/webui -run TestBrowser -count=1
ls -l docs/img/*.png
