package sandbox

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

func TestNumberConversion(t *testing.T) {
	cases := []struct {
		in       string
		typ      string // Starlark type, or "$literal"
		starlark string // String() of the value
		out      string // JSON written back
	}{
		{"0", "int", "0", "0"},
		{"-0", "int", "0", "0"},
		{"42", "int", "42", "42"},
		{"-9223372036854775808", "int", "-9223372036854775808", "-9223372036854775808"},
		{"9223372036854775808", "int", "9223372036854775808", "9223372036854775808"},
		{"123456789012345678901234567890", "int", "123456789012345678901234567890", "123456789012345678901234567890"},
		{"1.5", "float", "1.5", "1.5"},
		{"2.0", "float", "2.0", "2.0"},
		{"0.1", "float", "0.1", "0.1"},
		{"1e10", "float", "1e+10", "1e+10"},
		{"1.25e-7", "float", "1.25e-07", "1.25e-07"},
		{"-0.0", "float", "-0.0", "-0.0"},
		{"1E+2", "float", "100.0", "100.0"},
		{"12345678901234567890.5", "$literal", "", "12345678901234567890.5"},
		{"1e400", "$literal", "", "1e400"},
		{"-1e400", "$literal", "", "-1e400"},
		{"0.1000000000000000055511151231257827", "$literal", "", "0.1000000000000000055511151231257827"},
		{"1e-400", "$literal", "", "1e-400"},
		{"9007199254740993.0", "$literal", "", "9007199254740993.0"},
		{"1e99999999999999999999", "$literal", "", "1e99999999999999999999"},
	}
	for _, tc := range cases {
		v, err := fromJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if tc.typ == "$literal" {
			if txt, ok := literalText(v); !ok || txt != tc.in {
				t.Errorf("%s: got %s, want $literal", tc.in, v)
			}
		} else if v.Type() != tc.typ || v.String() != tc.starlark {
			t.Errorf("%s: got %s %s, want %s %s", tc.in, v.Type(), v, tc.typ, tc.starlark)
		}
		out, err := toJSON(v, 0)
		if err != nil || string(out) != tc.out {
			t.Errorf("%s: wrote %s (%v), want %s", tc.in, out, err, tc.out)
		}
	}
}

func TestJSONConversionErrors(t *testing.T) {
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	for _, in := range []string{"", "[", "{\"a\" 1}", "1 2", "nul", deep} {
		if _, err := fromJSON([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	l := starlark.NewList(nil)
	_ = l.Append(l)
	if _, err := toJSON(l, 0); err == nil || !strings.Contains(err.Error(), "contains itself") {
		t.Errorf("cyclic list: %v", err)
	}
	big := starlark.String(strings.Repeat("x", 100))
	if _, err := toJSON(big, 50); err == nil {
		t.Errorf("cap not enforced")
	}
	// strings: escapes, invalid UTF-8 replaced, U+2028 escaped
	out, _ := toJSON(starlark.String("a\"\\\n\x01\xff\u2028é"), 0)
	if string(out) != `"a\"\\\n\u0001\ufffd\u2028é"` {
		t.Errorf("string encoding %s", out)
	}
	var back string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Errorf("encoded string is not JSON: %v", err)
	}
}

func TestMangle(t *testing.T) {
	cases := map[string]string{
		"fs": "fs", "my-db": "my_db", "2fa": "_2fa", "def": "_def", "lambda": "_lambda",
		"a.b c": "a_b_c", "": "_", "héllo": "h_llo", "None": "_None", "x__y": "x__y",
	}
	for in, want := range cases {
		if got := Ident(in); got != want {
			t.Errorf("Ident(%q) = %q, want %q", in, got, want)
		}
	}
	servers := []Server{
		{ID: "my_db", Tools: []Tool{{Name: "q"}}},
		{ID: "my-db", Tools: []Tool{{Name: "list-items"}, {Name: "list_items"}, {Name: "list.items"}}},
		{ID: "len", Tools: []Tool{{Name: "x"}}},
		{ID: "call", Tools: []Tool{{Name: "x"}}},
	}
	n := Mangle(servers)
	wantMods := map[string]string{"my-db": "my_db", "my_db": "my_db_2", "len": "_len", "call": "_call"}
	for id, want := range wantMods {
		if n.Modules[id] != want {
			t.Errorf("module of %q = %q, want %q", id, n.Modules[id], want)
		}
	}
	wantTools := map[string]string{
		"my-db__list-items": "my_db.list_items", "my-db__list.items": "my_db.list_items_2",
		"my-db__list_items": "my_db.list_items_3", "my_db__q": "my_db_2.q",
	}
	for c, want := range wantTools {
		if n.Tools[c] != want {
			t.Errorf("tool %q = %q, want %q", c, n.Tools[c], want)
		}
	}
	if len(n.Collisions) != 3 {
		t.Errorf("collisions %v, want 3", n.Collisions)
	}
	// deterministic regardless of input order
	rev := []Server{servers[3], servers[2], servers[1], servers[0]}
	n2 := Mangle(rev)
	for c, v := range n.Tools {
		if n2.Tools[c] != v {
			t.Errorf("order dependent: %q = %q vs %q", c, v, n2.Tools[c])
		}
	}
}

func TestSignature(t *testing.T) {
	cases := []struct {
		tool Tool
		want string
	}{
		{Tool{Name: "read_text_file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"integer"}},"required":["path"]}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`)},
			"def read_text_file(path: str, head: int = None) -> dict"},
		{Tool{Name: "search-issues", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"max-results":{"type":["integer","null"],"default":10},"labels":{"type":"array","items":{"type":"string"}},"any":{}},"required":["q"],"additionalProperties":false}`)},
			"def search_issues(q: str, max_results: int | None = 10, labels: list[str] = None, any: Any = None) -> Any"},
		{Tool{Name: "ping"}, "def ping(**kwargs) -> Any"},
		{Tool{Name: "u", InputSchema: json.RawMessage(`{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]},"flag":{"type":"boolean","default":true}}}`)},
			"def u(v: str | float = None, flag: bool = True) -> Any"},
	}
	for _, tc := range cases {
		if got := Signature(tc.tool); got != tc.want {
			t.Errorf("Signature:\n got %s\nwant %s", got, tc.want)
		}
	}
	h := newFakeHost()
	docs := Docs(h.servers[0])
	for _, want := range []string{`# module db: server "db", 2 tools`, "def echo(**kwargs) -> Any:", `def query(sql: str, limit: int = 100, mode: Literal["fast", "exact"] = None) -> dict:`, `"Run a read-only SQL query. Returns {rows: list}."`} {
		if !strings.Contains(docs, want) {
			t.Errorf("Docs missing %q:\n%s", want, docs)
		}
	}
	if s := Summary(Tool{Description: strings.Repeat("word ", 100)}); len(s) > 120 {
		t.Errorf("summary too long: %d", len(s))
	}
}

// FuzzJSONRoundTrip: any JSON value decodes to Starlark and encodes back to
// JSON that means the same thing (numbers compared as exact decimals), and
// from the second round trip on the text is a fixed point.
func FuzzJSONRoundTrip(f *testing.F) {
	for _, s := range []string{
		`0`, `-0`, `1.5`, `1e400`, `-1e-400`, `12345678901234567890.5`, `0.1000000000000000055511151231257827`,
		`123456789012345678901234567890`, `{"a":[1,2.0,"x",null,true],"b":{"$literal":"7"}}`,
		`"\u2028\ud800"`, `"\ud83d\ude00 \udc00\ud800x \ud800\u0041"`, "\"\xff\xfe ok\"", `"\/\b\f\n\r\t\"\\"`, ` [ 1 , { } ] `, `[[[]]]`, `{"$literal":"1e5"}`, `{"$literal":"bad"}`, `9007199254740993`, `1E+2`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			if _, err := fromJSON(data); err == nil {
				t.Fatalf("invalid JSON accepted: %q", data)
			}
			return
		}
		v, err := fromJSON(data)
		if err != nil {
			if strings.Contains(err.Error(), "levels deep") {
				return
			}
			t.Fatalf("valid JSON rejected: %q: %v", data, err)
		}
		out, err := toJSON(v, 0)
		if err != nil {
			t.Fatalf("encode %q: %v", data, err)
		}
		if !json.Valid(out) {
			t.Fatalf("encoded invalid JSON %q from %q", out, data)
		}
		if !sameJSON(t, data, out) {
			t.Fatalf("round trip changed the value:\n in %s\nout %s", data, out)
		}
		v2, err := fromJSON(out)
		if err != nil {
			t.Fatalf("re-decode %q: %v", out, err)
		}
		out2, err := toJSON(v2, 0)
		if err != nil || !sameJSON(t, out, out2) {
			t.Fatalf("second round trip differs: %s vs %s (%v)", out, out2, err)
		}
		// from the second trip on, the text is a fixed point
		v3, _ := fromJSON(out2)
		if out3, _ := toJSON(v3, 0); !bytes.Equal(out2, out3) {
			t.Fatalf("not a fixed point: %s vs %s", out2, out3)
		}
	})
}

// sameJSON compares two JSON texts: numbers as exact decimals, strings
// exactly (both sides go through encoding/json).
func sameJSON(t *testing.T, a, b []byte) bool {
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	var va, vb any
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return sameValue(va, vb)
}

func sameValue(a, b any) bool {
	// {"$literal": "<number>"} is reserved: it stands for the number.
	if m, ok := a.(map[string]any); ok && len(m) == 1 {
		if s, ok := m[literalKey].(string); ok && isJSONNumber(s) {
			a = json.Number(s)
		}
	}
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameDecimal(string(x), string(y))
	case string:
		y, ok := b.(string)
		return ok && x == y // both decoded by encoding/json: same replacement rules
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameValue(v, y[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}
