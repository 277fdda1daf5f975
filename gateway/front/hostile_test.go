package front

import (
	"fmt"
	"strconv"
	"strings"
)

// hostileCall is one request built to read differently to two JSON
// readers.
type hostileCall struct {
	body string
	tool string // the tool the SDK reads from body (an HTTP request's Mcp-Name)
}

// hostileEras are the protocol eras both fast paths' hostile requests
// are sent in.
var hostileEras = []struct {
	name    string
	modern  bool
	version string
}{{"legacy", false, "2025-11-25"}, {"legacy-2025-06-18", false, "2025-06-18"}, {"legacy-2025-03-26", false, "2025-03-26"}, {"legacy-2024-11-05", false, "2024-11-05"}, {"modern", true, ""}}

// hostileCalls are the requests both fast paths must answer exactly as
// the SDK does, whatever the transport: escaped, repeated and case-varied
// member names, bytes that are not UTF-8, ids the SDK converts or
// cannot take (null), the fast
// path's internal _meta key, nesting at the decoder's limit, and results
// whose shape depends on the era. meta is the era's _meta member; ids
// are numbered from first, beside a few fixed ones (0, 2400, 2^53+1 and a
// long string) no numbering reaches: ids of calls in flight at once must
// differ.
func hostileCalls(meta string, first int) []hostileCall {
	n := first - 1
	id := func() string { n++; return strconv.Itoa(n) }
	p := func(name, args string) string { return fmt.Sprintf(`{"name":%q,"arguments":%s,%s}`, name, args, meta) }
	nested := func(depth int) string {
		return p("up__echo", `{"x":`+strings.Repeat("[", depth)+strings.Repeat("]", depth)+`}`)
	}
	echo := p("up__echo", `{"x":1}`)
	calls := []hostileCall{
		{`{"jsonrpc":"2.0","id":` + id() + `,"m\u0065thod":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/c\u0061ll","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"id":` + id() + `,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + echo + `,"params":` + p("up__structured", `{}`) + `}`, "up__structured"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","Method":"ping","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + echo + `,"PARAMS":{"name":"up__fail"}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","Name":"up__fail","arguments":{},` + meta + `}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","name":"up__fail","arguments":{},` + meta + `}}`, "up__fail"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"n\u0061me":"up__fail","arguments":{},` + meta + `}}`, "up__fail"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__\u0065cho","arguments":{},` + meta + `}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__ech` + "\xff" + `","arguments":{},` + meta + `}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + p("up__echo", `{"x":"`+"\xc3\x28"+`"}`) + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":2.4e3,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 4096) + `","method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2\u002e0","id":` + id() + `,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + p("up__echo", `null`) + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"progressToken":{"a":1}}}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"progressToken":1.5}}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"sluice.internal/answered":"00"}}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"sluice__read_result","arguments":{}}}`, "sluice__read_result"},
	}
	// Ids, params and names the two readers could convert apart.
	for _, c := range []hostileCall{
		{`{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		// A null id: no notification (that has no id), no valid request.
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","id":null,"params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":"\u0031\ud800","method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call ","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":[` + echo + `]}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo\u0000","arguments":{},` + meta + `}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo\ud800","arguments":{},` + meta + `}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + p("up__echo", `{"a":1,"a":"\ud800"}`) + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + p("up__echo", `{"b":1e999}`) + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + p("up__echo", `{"b":[-1e400]}`) + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + p("up__echo", `{"b":123456789012345678901234567890e300}`) + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"x":1e999}}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":null}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"progressToken":"p","progressToken":"q"}}}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":{"name":"up__echo","arguments":{},"_meta":{"progressToken":123456789012345678901234567890}}}`, "up__echo"},
		{"\ufeff" + `{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + echo + `}`, "up__echo"},
		{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + echo + `} x`, "up__echo"},
		{` 	{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + echo + `}`, "up__echo"},
	} {
		calls = append(calls, c)
	}
	// Nesting around the SDK decoder's limit.
	for _, depth := range []int{995, 996, 997, 998} {
		calls = append(calls, hostileCall{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + nested(depth) + `}`, "up__echo"})
	}
	// Results whose shape may depend on the era the session speaks.
	for _, tool := range []string{"up__structured", "up__annotated", "up__image", "up__blockmeta", "up__upstreammeta", "up__odd"} {
		calls = append(calls, hostileCall{`{"jsonrpc":"2.0","id":` + id() + `,"method":"tools/call","params":` + p(tool, `{}`) + `}`, tool})
	}
	return calls
}
