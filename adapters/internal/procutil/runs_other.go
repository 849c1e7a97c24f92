//go:build !unix

package procutil

// processRuns reports every process as running where it cannot be asked:
// side folders are then only removed by their own Bridge.
func processRuns(pid int) bool { return true }
