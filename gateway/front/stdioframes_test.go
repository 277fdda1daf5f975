//go:build unix

package front

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// recordingTaker takes every request offered (frameTaker) and registers
// ids as a connection would (idClaimer), for the frame filter's fuzzing.
type recordingTaker struct {
	taken []*jsonrpc.Request
	ids   map[any]bool
}

func (r *recordingTaker) take(req *jsonrpc.Request) (takenCall, bool) {
	r.taken = append(r.taken, req)
	return nil, true
}

func (r *recordingTaker) spawn(fn func()) { go fn() }

func (r *recordingTaker) claim(id jsonrpc.ID) claimResult {
	if r.ids[id.Raw()] {
		return claimDup
	}
	r.ids[id.Raw()] = true
	return claimOK
}

// FuzzStdinFramesTaken: with a taker and a claimer, as the stdio front
// runs it, the frame filter never offers a request with an id in flight
// or with no id, passes on no request (the taker takes them all) and no
// null-id one, answers with JSON-RPC errors only, and accounts for every
// line (taken, passed on or answered). FuzzQuickCall checks that what
// is offered reads as the SDK's decoder reads it.
func FuzzStdinFramesTaken(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{}}}` + "\n" +
			`{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"b"}}` + "\n",
		`{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","method":"ping","id":2,"id":null}` + "\n",
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		deep(996) + "\n" + deep(997) + "\n",
		`{"jsonrpc":"2.0","\u0069d":null,"method":"x"}` + "\n" + `[{"jsonrpc":"2.0","id":3,"method":"ping"}]` + "\n",
	} {
		f.Add([]byte(s))
	}
	const max = 1 << 16
	f.Fuzz(func(t *testing.T, in []byte) {
		pr, pw := io.Pipe()
		var out bytes.Buffer
		r := &recordingTaker{ids: map[any]bool{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			filterFrames(bytes.NewReader(in), pw, &out, max, quietLogger(), r, r)
		}()
		passed, err := io.ReadAll(pr)
		if err != nil {
			t.Fatal(err)
		}
		<-done
		seen := map[any]bool{}
		for _, req := range r.taken {
			if !req.IsCall() || seen[req.ID.Raw()] {
				t.Fatalf("offered %v twice or without an id", req.ID.Raw())
			}
			seen[req.ID.Raw()] = true
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(passed, []byte("\n")), []byte("\n")) {
			if len(passed) == 0 {
				break
			}
			msg, _, problem := checkMessage(line)
			if problem != "" {
				t.Fatalf("passed a malformed frame %q (%s)", line, problem)
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				t.Fatalf("passed a request the taker would have taken: %q", line)
			} else if ok && nullID(line) {
				t.Fatalf("passed a request with a null id: %q", line)
			}
		}
		answered := 0
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if out.Len() == 0 {
				break
			}
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || len(m.ID) == 0 {
				t.Fatalf("answered with a frame that is not a JSON-RPC error: %q", line)
			}
			answered++
		}
		// Every non-blank line read is taken, passed on or answered.
		lines := 0
		sc := bufio.NewScanner(bytes.NewReader(in))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				lines++
			}
		}
		if sc.Err() != nil {
			return // a line over the scanner's bound: counted by the cap test instead
		}
		passedLines := 0
		if len(passed) > 0 {
			passedLines = bytes.Count(passed, []byte("\n"))
		}
		if got := len(r.taken) + passedLines + answered; got != lines {
			t.Fatalf("%d lines read, %d taken + %d passed + %d answered", lines, len(r.taken), passedLines, answered)
		}
	})
}
