package mcp

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// failingTransport's Receive fails at once with a transport's own *Error
// that carries only its cause, as a remote transport's does when the
// server cannot be reached.
type failingTransport struct{}

func (*failingTransport) Send([]byte) error { return nil }
func (*failingTransport) Flush() error      { return nil }
func (*failingTransport) Close() error      { return nil }
func (*failingTransport) Receive() ([]byte, error) {
	return nil, &Error{Code: CodeClosed, Op: "read", Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
}

// TestFailureLogNamesTheCause: the "mcp server failed" line says why,
// even when the failure's only text is its cause. Before, it logged
// "error":"" for an unreachable remote server.
func TestFailureLogNamesTheCause(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, nil))
	c := New(&failingTransport{}, &Options{Server: "r", Logger: log})
	<-c.Done()
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "mcp server failed") || !strings.Contains(buf.String(), "connection refused") {
		t.Fatalf("failure log:\n%s\nwant the cause (connection refused)", buf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
