package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestQueuedLineIsNotReused: a request line handed whole to the writer
// goroutine must not go back to the pool, or the next request's line is
// built over it and the server reads that one in its place. The server
// stops reading after the handshake and its pipe is filled with page-size
// lines until a page no longer fits. The first call's line, short, still
// fits and is written whole by its caller; the call gives up, and its
// notifications/cancelled, which does not fit, holds the writer goroutine
// in its flush. The second call's line is queued behind it (checked), and
// that call gives up too. The server, reading again, must see both
// arguments, in order, and answer a third call after them. A line whose
// tail waits in the queue after a partial direct write:
// TestPartiallyWrittenLineIsNotReused.
func TestQueuedLineIsNotReused(t *testing.T) {
	// One P: a buffer given back is the next one taken (sync.Pool keeps
	// one per P), so a line given back too early is reused for certain.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c, cw, _, texts, free := heldPipeClient(t)
	call := func(text string, d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"`+text+`"}`), nil)
		return err
	}
	fillPipe(t, cw)
	if err := call("first", 100*time.Millisecond); CodeOf(err) != CodeTimeout {
		t.Fatalf("the call to a full pipe: %v", err)
	}
	if err := call("secnd", 100*time.Millisecond); CodeOf(err) != CodeTimeout {
		t.Fatalf("the second call to a full pipe: %v", err)
	}
	c.wmu.Lock()
	queued := false
	for _, l := range c.wq {
		queued = queued || strings.Contains(string(l), `"secnd"`)
	}
	c.wmu.Unlock()
	if !queued {
		t.Fatal("the second call's line is not in the queue: the test does not test a queued line")
	}
	free()
	if err := call("third", 30*time.Second); err != nil {
		t.Fatalf("the call after the server read again: %v", err)
	}
	if seen := serverSaw(t, texts, 3); strings.Join(seen, " ") != "first secnd third" {
		t.Fatalf("the server saw %q, want first, secnd, third", seen)
	}
}

// TestPartiallyWrittenLineIsNotReused: a line its caller wrote only in
// part (the pipe had room for less) has its tail queued for the writer
// goroutine; the buffer must not go back to the pool while the tail may
// still be read from it. The writer is held (writerHold) before it looks
// at the queue, the pipe is filled and exactly one page of it freed, a
// call with an argument larger than that page is written in part and
// gives up; then every buffer in the pool is taken and overwritten, the
// writer released: the server must read the argument as sent.
func TestPartiallyWrittenLineIsNotReused(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as in TestQueuedLineIsNotReused
	// The race detector drops a quarter of what is given back to a pool,
	// at random: enough rounds that a line given back is caught anyway.
	rounds := 1
	if raceBuild {
		rounds = 16
	}
	for r := 0; r < rounds; r++ {
		partialWriteRound(t)
	}
}

func partialWriteRound(t *testing.T) {
	c, cw, sr, texts, free := heldPipeClient(t)
	held, let := make(chan struct{}, 1), make(chan struct{})
	var letOnce sync.Once
	unhold := func() { letOnce.Do(func() { close(let) }) }
	hold := func(cl *Client) {
		if cl != c {
			return
		}
		select {
		case held <- struct{}{}:
		default:
		}
		<-let
	}
	writerHold.Store(&hold)
	defer writerHold.Store(nil)
	defer unhold() // before the client closes: its writer must not stay held
	c.signalWriter()
	select {
	case <-held:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("the writer goroutine did not come to the hold")
	}
	fillPipe(t, cw)
	page := make([]byte, 4096)
	if _, err := io.ReadFull(sr, page); err != nil { // one filler line: room for exactly a page
		t.Fatal(err)
	}
	text := strings.Repeat("0123456789abcdef", 500) // 8000 bytes: more than the page
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"`+text+`"}`), nil)
	cancel()
	if CodeOf(err) != CodeTimeout {
		t.Fatalf("the call to a full pipe: %v", err)
	}
	c.wmu.Lock()
	var tail []byte
	if len(c.wq) > 0 {
		tail = c.wq[0]
	}
	c.wmu.Unlock()
	if len(tail) >= len(text) || !strings.Contains(string(tail), text[len(text)-100:]) {
		t.Fatalf("the queue starts with %d bytes %.40q, want the tail of a line written in part: the test does not test a partial write", len(tail), tail)
	}
	// No collection in between: what the pool holds now is what it gives.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var taken []*buf
	for len(taken) < 1000 {
		b := getBuf()
		if cap(b.b) == 0 {
			break // a new one: the pool is empty
		}
		all := b.b[:cap(b.b)]
		for i := range all {
			all[i] = 'X'
		}
		taken = append(taken, b)
	}
	unhold()
	free()
	if seen := serverSaw(t, texts, 1); seen[0] != text {
		t.Fatalf("the server read %.80q (%d bytes), want the argument as sent (%d bytes)", seen[0], len(seen[0]), len(text))
	}
	runtime.KeepAlive(taken)
}

// heldPipeClient is pipeClient with a server that reads nothing after the
// handshake until free is called; texts gets each call's argument text as
// the server reads it (or the start of a line that is not JSON). free runs
// when the test ends too, before the client closes.
func heldPipeClient(t *testing.T) (c *Client, cw, sr *os.File, texts chan string, free func()) {
	t.Helper()
	release := make(chan struct{})
	var releaseOnce sync.Once
	free = func() { releaseOnce.Do(func() { close(release) }) }
	initialized := make(chan struct{})
	texts = make(chan string, 64)
	c, cw, sr = pipeClient(t, func(m *pipeMsg, line []byte, answer func(string)) {
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
	t.Cleanup(free) // runs before pipeClient's close of the client
	<-initialized   // the client has written all it had; the server reads no more
	return c, cw, sr, texts, free
}

// fillPipe fills the server's stdin, through a descriptor of its own
// (whose deadline the client's writes do not share), with whole filler
// lines of one page each (a write of that size is atomic: all or
// nothing) until it takes no more.
func fillPipe(t *testing.T, cw *os.File) {
	t.Helper()
	filler := `{"jsonrpc":"2.0","method":"notifications/filler","params":{"p":"`
	filler += strings.Repeat("f", 4096-len(filler)-4) + `"}}` + "\n"
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
			return
		}
		if err != nil || n != len(filler) {
			t.Fatalf("filling the pipe: %d bytes, %v", n, err)
		}
	}
}

// serverSaw is the first n texts the server reads.
func serverSaw(t *testing.T, texts chan string, n int) []string {
	t.Helper()
	var seen []string
	for len(seen) < n {
		select {
		case s := <-texts:
			seen = append(seen, s)
		case <-time.After(30 * time.Second): // hang guard
			t.Fatalf("the server saw %q", seen)
		}
	}
	return seen
}
