package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestQueuedLineIsNotReused: a request line that the caller could not
// write whole itself (the server's stdin is full) waits in the queue for
// the writer goroutine; the buffer it lies in must not serve the next
// request's line, or the server reads the next request in its place. The
// server here stops reading after the handshake, its pipe is filled to
// the brim, then one call
// gives up while its line is queued and another of the same length
// follows and gives up too: the server, reading again, must see both
// arguments, in order, and answer a call after them.
func TestQueuedLineIsNotReused(t *testing.T) {
	// One P: a buffer given back is the next one taken (sync.Pool keeps
	// one per P), so a line given back too early is reused for certain.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free() // before the client closes: the server must not stay held
	initialized := make(chan struct{})
	texts := make(chan string, 64)
	// The server reads nothing after the handshake until release.
	c, cw := pipeClient(t, func(m *pipeMsg, line []byte, answer func(string)) {
		switch {
		case m == nil:
			texts <- "malformed line: " + string(line[:min(len(line), 80)])
		case m.Method == "notifications/initialized":
			close(initialized)
			<-release
		case m.ID != nil:
			texts <- m.Params.Arguments.Text
			answer(`{"content":[]}`)
		}
	})
	call := func(text string, d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"`+text+`"}`), nil)
		return err
	}
	<-initialized // the client has written all it had; the server reads no more
	// Fill the pipe with whole filler lines of one page each (a write of
	// that size is atomic: all or nothing) until it takes no more.
	filler := `{"jsonrpc":"2.0","method":"notifications/filler","params":{"p":"`
	filler += strings.Repeat("f", 4096-len(filler)-4) + `"}}` + "\n"
	// Through a descriptor of its own, whose deadline the client's
	// writes do not share.
	var fill *os.File
	rc, err := cw.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(func(fd uintptr) {
		if d, err := syscall.Dup(int(fd)); err == nil {
			fill = os.NewFile(uintptr(d), "fill")
		}
	}); err != nil || fill == nil {
		t.Fatalf("a second descriptor for the pipe: %v", err)
	}
	defer fill.Close()
	for {
		if err := fill.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, err := fill.WriteString(filler)
		if errors.Is(err, os.ErrDeadlineExceeded) && n == 0 {
			break
		}
		if err != nil || n != len(filler) {
			t.Fatalf("filling the pipe: %d bytes, %v", n, err)
		}
	}
	// Its line queued, this call gives up; the next one's line is built
	// while that one still waits to be written.
	if err := call("first", 100*time.Millisecond); CodeOf(err) != CodeTimeout {
		t.Fatalf("the call to a full pipe: %v", err)
	}
	if err := call("secnd", 100*time.Millisecond); CodeOf(err) != CodeTimeout {
		t.Fatalf("the second call to a full pipe: %v", err)
	}
	free()
	if err := call("third", 30*time.Second); err != nil {
		t.Fatalf("the call after the server read again: %v", err)
	}
	var seen []string
	for len(seen) < 3 {
		select {
		case s := <-texts:
			seen = append(seen, s)
		case <-time.After(30 * time.Second): // hang guard
			t.Fatalf("the server saw %q", seen)
		}
	}
	if strings.Join(seen, " ") != "first secnd third" {
		t.Fatalf("the server saw %q, want first, secnd, third", seen)
	}
}
