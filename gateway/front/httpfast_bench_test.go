//go:build unix

package front

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHTTPToolCall measures front's own cost of one tools/call over
// streamable HTTP (the handler called in process, a backend answering at
// once), through the fast path and through the SDK, in both eras; the
// ratio fast ÷ sdk is the claim.
func BenchmarkHTTPToolCall(b *testing.B) {
	for _, era := range []string{"legacy", "modern"} {
		for _, path := range []string{"sdk", "fast"} {
			b.Run(era+"/"+path, func(b *testing.B) {
				be := newFake()
				be.setItems(KindTools, toolItem("up", "echo", "Echoes."))
				be.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
					return json.RawMessage(`{"content":[{"type":"text","text":"hello, world"}]}`), nil
				}
				h, err := NewHTTPHandler(be, &Options{Mode: ModeFlat, Logger: quietLogger(), noFastPath: path == "sdk"})
				if err != nil {
					b.Fatal(err)
				}
				defer h.Shutdown(context.Background())
				hdr := http.Header{}
				hdr.Set("Content-Type", "application/json")
				hdr.Set("Accept", "application/json, text/event-stream")
				meta := `"_meta":{"progressToken":1}`
				if era == "modern" {
					hdr.Set("Mcp-Protocol-Version", modernVersion)
					hdr.Set("Mcp-Method", "tools/call")
					hdr.Set("Mcp-Name", "up__echo")
					meta = modernMeta(`,"progressToken":1`)
				} else {
					rec := serve(h, hdr, legacyInit)
					hdr.Set("Mcp-Session-Id", rec.Header().Get("Mcp-Session-Id"))
					hdr.Set("Mcp-Protocol-Version", "2025-11-25")
					serve(h, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"hello, world"},%s}}`, meta)
				if rec := serve(h, hdr, body); !strings.Contains(rec.Body.String(), "hello, world") {
					b.Fatalf("no answer: %d %s", rec.Code, rec.Body.String())
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					serve(h, hdr, body)
				}
			})
		}
	}
}

func serve(h *Handler, hdr http.Header, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "http://127.0.0.1:8181"+MCPPath, strings.NewReader(body))
	req.Header = hdr.Clone()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
