//go:build unix

package front

import (
	"strings"
	"testing"
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
