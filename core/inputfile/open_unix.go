//go:build unix

package inputfile

import (
	"os"
	"syscall"
)

// openNoBlock opens path read-only without waiting: a FIFO swapped in after
// the check cannot block the open, and a terminal does not become the
// controlling one.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}
