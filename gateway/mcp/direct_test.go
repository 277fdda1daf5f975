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
	release := make(chan struct{})
	lines := make(chan string, 16)
	c, _, _ := pipeClient(t, func(m *pipeMsg, line []byte, answer func(string)) {
		if m == nil {
			lines <- "malformed line: " + string(line[:min(len(line), 80)])
			return
		}
		if m.ID == nil {
			return // notifications
		}
		<-release
		lines <- m.Method + " " + strconv.Itoa(len(line))
		answer(`{"content":[]}`)
	})
	// Far more than a pipe holds: the direct write cannot finish.
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 1<<20) + `"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := c.CallTool(ctx, "echo", big, nil)
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

// pipeMsg is what pipeClient's server reads of a line.
type pipeMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Arguments struct{ Text string } `json:"arguments"`
	} `json:"params"`
}

// pipeClient is a client (legacy era, handshake done) over two pipes to a
// server goroutine that answers initialize itself and hands every other
// line it reads to serve, in order, with a function that answers the
// line's request with result (m is nil for a line that is not JSON). cw is
// the client's end of the server's stdin, sr the server's (a test may read
// it only while serve holds the server). The client is closed when the
// test ends; the server ends when its stdin does.
func pipeClient(t *testing.T, serve func(m *pipeMsg, line []byte, answer func(result string))) (c *Client, cw, sr *os.File) {
	t.Helper()
	cr, sw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		r := bufio.NewReaderSize(sr, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m pipeMsg
			if json.Unmarshal(line, &m) != nil {
				serve(nil, line, nil)
				continue
			}
			answer := func(result string) {
				sw.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + "}\n"))
			}
			if m.Method == "initialize" {
				answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"t"}}`)
				continue
			}
			serve(&m, line, answer)
		}
	}()
	c = NewClient(cr, cw, func() proc.Outcome {
		cw.Close()
		<-served
		sw.Close()
		cr.Close()
		sr.Close()
		return proc.Outcome{Complete: true}
	}, &Options{Server: "t", Era: EraLegacy})
	t.Cleanup(func() { c.Close() })
	if c.direct == nil {
		t.Fatal("a client over a pipe does not write directly")
	}
	if err := c.Handshake(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, cw, sr
}

type nopDeadline struct{}

func (nopDeadline) Write(p []byte) (int, error) { return len(p), nil }
func (nopDeadline) Close() error                { return nil }

type errDeadline struct{ nopDeadline }

func (errDeadline) SetWriteDeadline(time.Time) error { return errors.New("no deadlines here") }
