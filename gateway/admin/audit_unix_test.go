//go:build unix && !solaris && !aix

package admin

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sluice/gateway/internal/files"
)

// TestAuditLogRecentRefusesFIFO: reading never blocks on a FIFO planted
// at the log's path or at its rotated copy (an open of a FIFO waits for a
// writer). One at the path is refused with an error naming it; one at the
// rotated copy is passed over like any unreadable copy, and the newest
// decisions are still returned.
func TestAuditLogRecentRefusesFIFO(t *testing.T) {
	for _, planted := range []string{"audit.jsonl", "audit.jsonl.1"} {
		t.Run(planted, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			l := AuditLog{Path: path, Lock: files.Lock}
			if planted != "audit.jsonl" {
				if err := l.Append(Decision{Kind: "trust", Capabilities: []string{"a"}, Via: "cli", Approved: true}); err != nil {
					t.Fatal(err)
				}
			}
			fifo := filepath.Join(dir, planted)
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			var got []Decision
			go func() {
				ds, err := l.Recent(10)
				got = ds
				done <- err
			}()
			select {
			case err := <-done:
				if planted == "audit.jsonl" {
					if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "not a regular file") {
						t.Fatalf("Recent with a FIFO at %s: %v", fifo, err)
					}
				} else if err != nil || len(got) != 1 || got[0].Kind != "trust" {
					t.Fatalf("Recent with a FIFO at %s: %+v, %v", fifo, got, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("Recent blocked on the FIFO at %s", fifo)
			}
		})
	}
}
