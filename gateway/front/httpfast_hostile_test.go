//go:build unix

package front

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// hostileExchange sends requests built to read differently to two JSON
// readers (escaped and repeated member names, case variants, odd ids,
// bytes that are not UTF-8, ids of calls in flight) and returns every
// answer.
func hostileExchange(t *testing.T, opts Options, modern bool, legacyVersion string) []answer {
	opts.Logger = quietLogger()
	_, srv := newHTTP(t, fastBackend(), &opts)
	a := &httpAgent{t: t, url: srv.URL}
	meta := `"_meta":{}`
	if modern {
		a.version = modernVersion
		meta = modernMeta("")
	} else {
		if got := a.post(strings.Replace(legacyInit, "2025-11-25", legacyVersion, 1), nil); got.status != 200 || a.sid == "" {
			t.Fatalf("initialize: %v", got)
		}
		a.version = legacyVersion
		a.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	}
	headers := func(name string) func(http.Header) {
		return func(h http.Header) {
			if modern {
				h.Set("Mcp-Method", "tools/call")
				h.Set("Mcp-Name", name)
			}
		}
	}
	var out []answer
	calls := hostileCalls(meta, 1)
	// What an HTTP body may carry beside one message (another message, a
	// byte order mark, trailing space), and messages the SDK refuses
	// (ids it cannot take, versions, params).
	echo := fmt.Sprintf(`{"name":"up__echo","arguments":{"x":1},%s}`, meta)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":101,"method":"tools/call","params":` + echo + `}{"jsonrpc":"2.0","id":102,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":103,"method":"tools/call","params":` + echo + `} `,
		"\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":104,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":1e1,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"1.0","id":105,"method":"tools/call","params":` + echo + `}`,
		`{"id":106,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":107,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":108,"method":"tools/call","params":{"name":"up__echo","arguments":[1],` + meta + `}}`,
	} {
		calls = append(calls, hostileCall{body, "up__echo"})
	}
	for _, c := range calls {
		out = append(out, a.post(c.body, headers(c.tool)))
	}
	return out
}

// TestHTTPFastPathHostileRequestsAnswerAsTheSDK: a request two readers
// could read apart is answered exactly as the SDK answers it, whether or
// not the fast path is on (no request smuggled past the SDK's reading).
func TestHTTPFastPathHostileRequestsAnswerAsTheSDK(t *testing.T) {
	for _, era := range hostileEras {
		t.Run(era.name, func(t *testing.T) {
			var viaSDK, viaFast atomic.Int64
			sdk := hostileExchange(t, Options{Mode: ModeFlat, noFastPath: true, fastTaken: &viaSDK}, era.modern, era.version)
			fast := hostileExchange(t, Options{Mode: ModeFlat, fastTaken: &viaFast}, era.modern, era.version)
			if viaFast.Load() == 0 {
				t.Fatal("the fast path took none of the calls")
			}
			for i := range sdk {
				if !sameAnswer(sdk[i], fast[i]) {
					t.Errorf("request %d:\n sdk:  %v\n fast: %v", i, sdk[i], fast[i])
				}
			}
			t.Logf("fast path took %d of %d", viaFast.Load(), len(fast))
		})
	}
}
