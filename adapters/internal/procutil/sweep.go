package procutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SweepEndedDirs removes the folders under dir named prefix + a process id
// + "-" + anything whose process no longer runs: the folders a Bridge
// process makes for its side processes (named with its own id) and could
// not remove because it was killed. Folders of this process and of
// processes that still run are kept; other names are never touched.
func SweepEndedDirs(dir, prefix string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || processRuns(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
