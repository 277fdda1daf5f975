package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluice/gateway/proc"
)

// TestDirectWriteKeepsFramingWhenThePipeIsFull: a caller writes its own
// line to an idle server stdin (a pipe, which takes write deadlines). When
// the server is not reading, the caller is not held (its call ends on its
// context) and the part of the line the pipe did not take is finished by
// the writer goroutine: once the server reads again it sees every line
// whole and in order, and later calls are answered.
func TestDirectWriteKeepsFramingWhenThePipeIsFull(t *testing.T) {
	cr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	lines := make(chan string, 16)
	served := make(chan struct{})
	go func() { // the server: answers initialize, then waits for release
		defer close(served)
		r := bufio.NewReaderSize(sr, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &m) != nil {
				lines <- "malformed line: " + string(line[:min(len(line), 80)])
				continue
			}
			if m.Method == "initialize" {
				sw.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"t"}}}` + "\n"))
				continue
			}
			if m.ID == nil {
				continue // notifications
			}
			<-release
			lines <- m.Method + " " + strconv.Itoa(len(line))
			sw.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[]}}` + "\n"))
		}
	}()
	c := NewClient(cr, cw, func() proc.Outcome {
		cw.Close()
		<-served
		sw.Close()
		cr.Close()
		sr.Close()
		return proc.Outcome{Complete: true}
	}, &Options{Server: "t", Era: EraLegacy})
	defer c.Close()
	if c.direct == nil {
		t.Fatal("a client over a pipe does not write directly")
	}
	if err := c.Handshake(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Far more than a pipe holds: the direct write cannot finish.
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<20) + `"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = c.CallTool(ctx, "echo", big, nil)
	cancel()
	if CodeOf(err) != CodeTimeout && CodeOf(err) != CodeAborted {
		t.Fatalf("a call to a server that does not read: %v", err)
	}
	close(release)
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"small"}`), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the call after the server read again: %v", err)
		}
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("no answer once the server reads again")
	}
	var seen []string
	for len(seen) < 2 {
		select {
		case l := <-lines:
			seen = append(seen, l)
		case <-time.After(30 * time.Second):
			t.Fatalf("lines seen: %q", seen)
		}
	}
	if !strings.HasPrefix(seen[0], "tools/call ") || !strings.HasPrefix(seen[1], "tools/call ") {
		t.Fatalf("the server saw %q", seen)
	}
	if n, _ := strconv.Atoi(strings.TrimPrefix(seen[0], "tools/call ")); n < len(big) {
		t.Fatalf("the big line arrived with %d bytes, want more than %d", n, len(big))
	}
}

// TestBarePipeWritesThroughTheWriter: a transport whose writer takes no
// write deadline (an io.Pipe, or one that refuses it) never has the caller
// write.
func TestBarePipeWritesThroughTheWriter(t *testing.T) {
	if (&stdio{w: nopDeadline{}}).canSendDirect() {
		t.Fatal("a writer without deadlines was taken for a pipe")
	}
	if (&stdio{w: errDeadline{}}).canSendDirect() {
		t.Fatal("a writer whose deadline fails was taken for a pipe")
	}
}

type nopDeadline struct{}

func (nopDeadline) Write(p []byte) (int, error) { return len(p), nil }
func (nopDeadline) Close() error                { return nil }

type errDeadline struct{ nopDeadline }

func (errDeadline) SetWriteDeadline(time.Time) error { return errors.New("no deadlines here") }
