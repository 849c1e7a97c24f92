package storage_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/storage"
)

// TestConcurrentFirstOpen: two Bridges (two editor windows) starting at
// the same moment on a data directory that has no database yet both open
// it; neither sees "database is locked".
func TestConcurrentFirstOpen(t *testing.T) {
	for trial := 0; trial < 30; trial++ {
		path := filepath.Join(t.TempDir(), "bridge.db")
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := storage.Open(context.Background(), path, storage.Options{})
				if err != nil {
					t.Errorf("trial %d: %v", trial, err)
					return
				}
				db.Close()
			}()
		}
		wg.Wait()
	}
}
