//go:build unix

package front

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

var nameRe = regexp.MustCompile(`"name":"(up__[a-z]+)"`)

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
	p := func(name, args string) string {
		return fmt.Sprintf(`{"name":%q,"arguments":%s,%s}`, name, args, meta)
	}
	echo := p("up__echo", `{"x":1}`)
	var out []answer
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":1,"m\u0065thod":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/c\u0061ll","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":` + echo + `,"params":` + p("up__structured", `{}`) + `}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","Method":"ping","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + echo + `,"PARAMS":{"name":"up__fail"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"up__echo","Name":"up__fail","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up__echo","name":"up__fail","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"n\u0061me":"up__fail","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":` + p("up__\u0065cho", `{}`) + `}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"up__ech` + "\xff" + `","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":` + p("up__echo", `{"x":"`+"\xc3\x28"+`"}`) + `}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":1e1,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 4096) + `","method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2\u002e0","id":19,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"1.0","id":20,"method":"tools/call","params":` + echo + `}`,
		`{"id":21,"method":"tools/call","params":` + echo + `}`,
		"\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":23,"method":"tools/call","params":` + echo + `}{"jsonrpc":"2.0","id":24,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":` + echo + `} `,
		`{"jsonrpc":"2.0","id":26,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":27,"method":"tools/call","params":` + p("up__echo", `null`) + `}`,
		`{"jsonrpc":"2.0","id":28,"method":"tools/call","params":` + p("up__echo", `[1]`) + `}`,
		`{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"progressToken":{"a":1}}}}`,
		`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"progressToken":1.5}}}`,
		`{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"sluice.internal/answered":"00"}}}`,
		`{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"sluice__read_result","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":33,"method":"tools/call","params":` + p("up__echo", `{"x":`+strings.Repeat("[", 998)+strings.Repeat("]", 998)+`}`) + `}`,
		// Results whose shape may depend on the era the session speaks.
		`{"jsonrpc":"2.0","id":34,"method":"tools/call","params":` + p("up__structured", `{}`) + `}`,
		`{"jsonrpc":"2.0","id":35,"method":"tools/call","params":` + p("up__annotated", `{}`) + `}`,
		`{"jsonrpc":"2.0","id":36,"method":"tools/call","params":` + p("up__image", `{}`) + `}`,
		`{"jsonrpc":"2.0","id":37,"method":"tools/call","params":` + p("up__blockmeta", `{}`) + `}`,
		`{"jsonrpc":"2.0","id":38,"method":"tools/call","params":` + p("up__upstreammeta", `{}`) + `}`,
		`{"jsonrpc":"2.0","id":39,"method":"tools/call","params":` + p("up__odd", `{}`) + `}`,
	} {
		name := "up__echo"
		if m := nameRe.FindStringSubmatch(body); m != nil && i != 3 {
			name = m[1]
		} else if i == 3 {
			name = "up__structured"
		}
		out = append(out, a.post(body, headers(name)))
	}
	return out
}

// TestHTTPFastPathHostileRequestsAnswerAsTheSDK: a request two readers
// could read apart is answered exactly as the SDK answers it, whether or
// not the fast path is on (no request smuggled past the SDK's reading).
func TestHTTPFastPathHostileRequestsAnswerAsTheSDK(t *testing.T) {
	for _, era := range []struct {
		name    string
		modern  bool
		version string
	}{{"legacy", false, "2025-11-25"}, {"legacy-2025-06-18", false, "2025-06-18"}, {"legacy-2025-03-26", false, "2025-03-26"}, {"legacy-2024-11-05", false, "2024-11-05"}, {"modern", true, ""}} {
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
