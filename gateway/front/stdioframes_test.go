//go:build unix

package front

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveScript runs ServeStdio over a stdin that holds script and then ends
// at once (a client that writes its requests and closes, like
// `printf ... | sluice serve`), and returns every frame written to stdout
// plus the log.
func serveScript(t *testing.T, b Backend, opts *Options, script string) ([]map[string]json.RawMessage, string) {
	t.Helper()
	var logs syncBuffer
	if opts == nil {
		opts = &Options{}
	}
	opts.NoSignals = true
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- ServeStdio(context.Background(), b, opts, strings.NewReader(script), &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeStdio did not return after stdin EOF")
	}
	var frames []map[string]json.RawMessage
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
			t.Fatalf("stdout line is not a JSON-RPC frame: %q", line)
		}
		frames = append(frames, m)
	}
	return frames, string(logs.Bytes())
}

// framesText renders frames for a failure message.
func framesText(frames []map[string]json.RawMessage) string {
	var b strings.Builder
	for _, f := range frames {
		line, _ := json.Marshal(f)
		if len(line) > 300 {
			line = append(line[:300], "..."...)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// byID indexes response frames by their raw id.
func byID(frames []map[string]json.RawMessage) map[string]map[string]json.RawMessage {
	m := map[string]map[string]json.RawMessage{}
	for _, f := range frames {
		if _, isNote := f["method"]; isNote {
			continue
		}
		id := string(f["id"])
		if id == "" {
			id = "null"
		}
		if _, dup := m[id]; dup && id != "null" {
			id += "#2"
		}
		if id == "null" {
			m["null"+string(rune('0'+len(nullKeys(m))))] = f
			continue
		}
		m[id] = f
	}
	return m
}

func nullKeys(m map[string]map[string]json.RawMessage) []string {
	var k []string
	for id := range m {
		if strings.HasPrefix(id, "null") {
			k = append(k, id)
		}
	}
	return k
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestStdioAnswersEveryRequestBeforeEOF: requests written and stdin closed
// at once are all answered (a slow call included), pipelined requests do
// not overtake initialize, and malformed lines are answered without ending
// the session.
func TestStdioAnswersEveryRequestBeforeEOF(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "slow", "Slow."), toolItem("up", "echo", "Echo."))
	var mu sync.Mutex
	var calls []string
	b.call = func(ctx context.Context, r CallRequest, p Peer) (json.RawMessage, error) {
		mu.Lock()
		calls = append(calls, r.Capability)
		mu.Unlock()
		if r.Capability == "up__slow" {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
		return textResult("done " + r.Capability), nil
	}
	script := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call","arguments":{"capability":"up__slow","arguments":{}}}}`,
		`this is not json`,
		`{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"call","arguments":{"capability":"up__echo","arguments":{}}}}`,
		`{"jsonrpc":"2.0","method":5}`,
		`{"id":6,"method":"ping"}`,
		`   `,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
	}, "\n") + "\n"
	frames, logs := serveScript(t, b, nil, script)
	got := byID(frames)
	for _, id := range []string{"1", "2", "3", `"four"`, "7"} {
		f, ok := got[id]
		if !ok {
			t.Errorf("no answer to request %s; frames:\n%s\nlog:\n%s", id, framesText(frames), logs)
			continue
		}
		if _, bad := f["error"]; bad {
			t.Errorf("request %s answered with an error: %s", id, f["error"])
		}
	}
	if r := got["3"]; r != nil && !strings.Contains(string(r["result"]), "done up__slow") {
		t.Errorf("slow call's answer = %s", r["result"])
	}
	var parse, invalid int
	for id, f := range got {
		var e struct{ Code int }
		_ = json.Unmarshal(f["error"], &e)
		switch {
		case strings.HasPrefix(id, "null") && e.Code == -32700:
			parse++
		case (id == "6" || strings.HasPrefix(id, "null")) && e.Code == -32600:
			invalid++
		}
	}
	if parse != 1 || invalid != 2 {
		t.Errorf("want one -32700 (id null) and two -32600; got %d and %d:\n%s", parse, invalid, framesText(frames))
	}
	if _, ok := got["6"]; !ok {
		t.Errorf("an invalid request with a readable id is answered under that id:\n%s", framesText(frames))
	}
	if strings.Contains(logs, "initialized before initialize") || strings.Contains(logs, "invalid during session initialization") {
		t.Errorf("a pipelined request overtook initialize:\n%s", logs)
	}
}

// TestStdioOverlongLineIsAnswered: a line over MaxLineBytes is answered
// with -32600 and discarded; the next request is served.
func TestStdioOverlongLineIsAnswered(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", 20000) + `"}}`
	script := initLine + "\n" + long + "\n" + `{"jsonrpc":"2.0","id":10,"method":"ping"}` + "\n"
	frames, logs := serveScript(t, newFake(), &Options{MaxLineBytes: 8192}, script)
	got := byID(frames)
	if _, ok := got["10"]; !ok {
		t.Fatalf("the request after an overlong line was not answered:\n%s\n%s", framesText(frames), logs)
	}
	if _, ok := got["9"]; ok {
		t.Fatalf("the overlong request reached the SDK:\n%s", framesText(frames))
	}
	e := got["null0"]
	if e == nil || !strings.Contains(string(e["error"]), "-32600") || !strings.Contains(string(e["error"]), "longer than 8192 bytes") {
		t.Fatalf("overlong line answer missing:\n%s", framesText(frames))
	}
}

// TestFilterFramesKeepsWellFormedLines: well-formed frames pass byte for
// byte (split reads and CRLF included), one per write.
func TestFilterFramesKeepsWellFormedLines(t *testing.T) {
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}"
	pr, pw := io.Pipe()
	var out bytes.Buffer
	go filterFrames(iotestHalf{strings.NewReader(in)}, pw, &out, 4096, quietLogger(), nil, nil)
	got, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n"
	if string(got) != want || out.Len() != 0 {
		t.Fatalf("passed %q, answered %q", got, out.String())
	}
}

// iotestHalf returns at most 7 bytes per Read.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return h.r.Read(p)
}
