//go:build unix

package front

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzModernBody: the era router parses untrusted request bodies; it must
// never panic, and only claims "modern" for discover or a _meta version.
func FuzzModernBody(f *testing.F) {
	for _, s := range []string{
		initBody,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"params":null}`, `{"params":{"_meta":null}}`, `"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if modernBody(body) && !strings.Contains(string(body), "discover") && !strings.Contains(string(body), "protocolVersion") && !strings.Contains(string(body), `\u`) {
			t.Fatalf("modern without discover or a version: %q", body)
		}
	})
}

// FuzzOriginHost: Host and Origin checks parse untrusted headers; they
// must never panic and never admit a non-loopback host by default.
func FuzzOriginHost(f *testing.F) {
	for _, s := range []string{"localhost:8080", "127.0.0.1", "[::1]:1", "evil.example.com", "http://localhost:3000", "null", "http://127.0.0.1.evil.com", "http://[::1", "file://"} {
		f.Add(s)
	}
	h := &Handler{f: &front{}}
	f.Fuzz(func(t *testing.T, v string) {
		if h.hostAllowed(v) {
			name := strings.ToLower(hostname(v))
			if name != "localhost" && !strings.HasPrefix(name, "127.") && !strings.Contains(name, ":") {
				t.Fatalf("host %q admitted", v)
			}
		}
		_ = h.originAllowed(v)
	})
}

// FuzzStdinFrames: the stdio frame filter reads untrusted bytes. It must
// never panic; every line it passes on is one well-formed JSON-RPC
// message or batch no longer than the cap, and everything it writes
// itself is a JSON-RPC error frame.
func FuzzStdinFrames(f *testing.F) {
	for _, s := range []string{
		initBody + "\n",
		"not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
		"[]\n[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n{}\n123\n\"s\"\n",
		`{"jsonrpc":"2.0","id":"a","method":5}` + "\n" + `{"jsonrpc":"1.0","id":1.5}`,
		strings.Repeat("x", 5000) + "\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",
		"\n\n   \n",
	} {
		f.Add([]byte(s))
	}
	const max = 4096
	f.Fuzz(func(t *testing.T, in []byte) {
		pr, pw := io.Pipe()
		var out bytes.Buffer
		go filterFrames(bytes.NewReader(in), pw, &out, max, quietLogger(), nil, nil)
		passed, err := io.ReadAll(pr)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(passed, []byte("\n")), []byte("\n")) {
			if len(passed) == 0 {
				break
			}
			if len(line) > max {
				t.Fatalf("passed a %d-byte line over the %d cap", len(line), max)
			}
			if _, _, problem := checkMessage(line); problem != "" || !json.Valid(line) {
				t.Fatalf("passed a malformed frame %q (%s)", line, problem)
			}
		}
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
		}
	})
}

// FuzzHTTPRequest: whole untrusted HTTP requests (method, path, headers,
// body) through the handler. It must never panic, always answer with a
// status, and never let a request with a foreign Host through.
func FuzzHTTPRequest(f *testing.F) {
	for _, s := range []string{
		"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(len(initBody)) + "\r\n\r\n" + initBody,
		"POST /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: nope\r\nContent-Length: 2\r\n\r\n{}",
		"POST /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Protocol-Version: 2026-07-28\r\nContent-Length: 63\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{}}",
		"GET /mcp HTTP/1.1\r\nHost: [::1]:80\r\nAccept: text/event-stream\r\n\r\n",
		"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: x\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"POST /metrics HTTP/1.1\r\nHost: localhost\r\nOrigin: http://evil\r\nContent-Length: 1\r\n\r\nx",
	} {
		f.Add([]byte(s))
	}
	b := newFake()
	b.setItems(KindTools, toolItem("up", "echo", "Echo."))
	h, err := NewHTTPHandler(b, &Options{Logger: quietLogger(), MaxRequestBytes: 64 << 10, HTTPLimits: HTTPLimits{MaxSessions: 8}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { h.Shutdown(context.Background()) })
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // not an HTTP request: the server's parser refuses it
		}
		req.RemoteAddr = "127.0.0.1:1234"
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 100 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		if !h.hostAllowed(req.Host) && rec.Code != http.StatusForbidden {
			t.Fatalf("Host %q not allowed but answered %d", req.Host, rec.Code)
		}
	})
}
