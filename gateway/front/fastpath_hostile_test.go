package front

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostileStdio sends the stdio front frames built to read differently to
// two JSON readers and returns every frame it answered, canonical and
// sorted (answers to different requests may arrive in any order).
func hostileStdio(t *testing.T, opts Options, modern bool, legacyVersion string) []string {
	p := startStdio(t, fastBackend(), &opts)
	meta := `"_meta":{}`
	if modern {
		meta = modernMeta("")
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
		p.until(1)
	} else {
		p.send(strings.Replace(legacyInit, "2025-11-25", legacyVersion, 1))
		p.until(1)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	echo := fmt.Sprintf(`{"name":"up__echo","arguments":{"x":1},%s}`, meta)
	frames := []string{
		`{"jsonrpc":"2.0","id":11,"m\u0065thod":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/c\u0061ll","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":13,"id":14,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":` + echo + `,"params":{"name":"up__structured","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":16,"method":"tools/call","Method":"ping","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"up__echo","Name":"up__fail","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"up__echo","name":"up__fail","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"n\u0061me":"up__fail","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"up__\u0065cho","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"up__ech` + "\xff" + `","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":"` + "\xc3\x28" + `"},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":2.4e1,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2\u002e0","id":25,"method":"tools/call","params":` + echo + `}`,
		`{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"progressToken":{"a":1}}}}`,
		`{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"sluice.internal/answered":"00"}}}`,
		`{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":` + strings.Repeat("[", 995) + strings.Repeat("]", 995) + `},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":` + strings.Repeat("[", 996) + strings.Repeat("]", 996) + `},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":` + strings.Repeat("[", 997) + strings.Repeat("]", 997) + `},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"up__structured","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"up__annotated","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"up__image","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":"up__blockmeta","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"up__odd","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 4096) + `","method":"tools/call","params":` + echo + `}`,
	}
	for _, f := range frames {
		p.send(f)
	}
	// Every request is answered once; read until all are.
	var out []string
	for answered := 0; answered < len(frames); {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("stdout closed after %d answers: %q", answered, out)
			}
			if !strings.Contains(l, `"method"`) {
				answered++
			}
			out = append(out, canonical(t, l))
		case <-time.After(30 * time.Second): // hang guard
			t.Fatalf("%d of %d requests answered: %q", answered, len(frames), out)
		}
	}
	sort.Strings(out)
	return out
}

// TestStdioFastPathHostileFramesAnswerAsTheSDK: a frame two readers could
// read apart is answered exactly as the SDK answers it.
func TestStdioFastPathHostileFramesAnswerAsTheSDK(t *testing.T) {
	for _, era := range []struct {
		name    string
		modern  bool
		version string
	}{{"legacy", false, "2025-11-25"}, {"legacy-2025-06-18", false, "2025-06-18"}, {"legacy-2025-03-26", false, "2025-03-26"}, {"legacy-2024-11-05", false, "2024-11-05"}, {"modern", true, ""}} {
		t.Run(era.name, func(t *testing.T) {
			var viaSDK, viaFast atomic.Int64
			sdk := hostileStdio(t, Options{Mode: ModeFlat, noFastPath: true, fastTaken: &viaSDK}, era.modern, era.version)
			fast := hostileStdio(t, Options{Mode: ModeFlat, fastTaken: &viaFast}, era.modern, era.version)
			if viaFast.Load() == 0 {
				t.Fatal("the fast path took none of the calls")
			}
			if strings.Join(sdk, "\n") != strings.Join(fast, "\n") {
				t.Errorf("answers differ:\n sdk:\n  %s\n fast:\n  %s", strings.Join(sdk, "\n  "), strings.Join(fast, "\n  "))
			}
			t.Logf("fast path took %d", viaFast.Load())
		})
	}
}
