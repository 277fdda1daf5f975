package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sluice/gateway/config"
)

// BenchmarkScrubMessage: what a server's message costs the scrubber, per
// size of a tools/call result: with one secret declared (as an env token)
// and the result not holding it (every message of such a server pays
// this), and holding it once (the walk, decode and re-encode of the one
// string). A server with no secret gets no scrubber: nothing to measure.
func BenchmarkScrubMessage(b *testing.B) {
	ss := newScrubber(declSecrets(config.Server{ID: "fx", Command: "srv"}, map[string]string{"API_TOKEN": "tok-Value-2026-abcdef"}))
	for _, kib := range []int{1, 64, 1024} {
		text := strings.Repeat("log line without secrets, just words and numbers 12345\n", kib<<10/55+1)[:kib<<10]
		clean, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
		dirty, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text[:len(text)/2] + "tok-Value-2026-abcdef" + text[len(text)/2:]}}}})
		// an encoder that escapes every '/' and non-ASCII letter (PHP)
		escaped := bytes.ReplaceAll(bytes.ReplaceAll(clean, []byte("words"), []byte(`w\u00f6rds`)), []byte("just"), []byte(`just\/`))
		for name, msg := range map[string][]byte{"absent": clean, "present": dirty, "escaped": escaped} {
			b.Run(fmt.Sprintf("%dKiB/%s", kib, name), func(b *testing.B) {
				b.SetBytes(int64(len(msg)))
				b.ReportAllocs()
				var t0 = time.Now()
				for i := 0; i < b.N; i++ {
					ss.ScrubMessage(msg)
				}
				b.ReportMetric(float64(time.Since(t0).Nanoseconds())/float64(b.N)/(float64(len(msg))/1024), "ns/KiB")
			})
		}
	}
}

// BenchmarkServeStdioCallSecret is BenchmarkServeStdioCall with the
// fixture given a credential in its env: every answer it sends is
// searched (and holds none).
func BenchmarkServeStdioCallSecret(b *testing.B) {
	g := benchGateway(b, "    env: {API_TOKEN: \"tok-Value-2026-abcdef\"}\n")
	a := serveAgent(b, g, true, `{}`, nil)
	c := benchDirect(b)
	benchServeCall(b, a)
	benchDirectCall(b, c)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchDirectCall(b, c)
		benchServeCall(b, a)
	}
}
