//go:build !unix

package inputfile

import "os"

func openNoBlock(path string) (*os.File, error) { return os.Open(path) }
