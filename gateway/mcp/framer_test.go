package mcp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, f *Framer) ([]Message, error) {
	t.Helper()
	var out []Message
	for {
		m, err := f.Next()
		if err != nil {
			if errors.Is(err, ErrNoise) {
				continue
			}
			return out, err
		}
		out = append(out, m)
	}
}

func TestFramerSplitsLines(t *testing.T) {
	input := "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n" +
		"   \n" +
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n" +
		"\r\n" +
		`{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\n"
	for name, r := range map[string]io.Reader{
		"whole":   strings.NewReader(input),
		"onebyte": iotest.OneByteReader(strings.NewReader(input)),
		"half":    iotest.HalfReader(strings.NewReader(input)),
	} {
		t.Run(name, func(t *testing.T) {
			ms, err := readAll(t, NewFramer(r, 0))
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			kinds := []Kind{KindResponse, KindNotification, KindRequest}
			if len(ms) != len(kinds) {
				t.Fatalf("got %d messages, want %d", len(ms), len(kinds))
			}
			for i, k := range kinds {
				if ms[i].Kind != k {
					t.Errorf("message %d kind %v, want %v", i, ms[i].Kind, k)
				}
			}
			if string(ms[0].Raw) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
				t.Errorf("trailing CR not stripped: %q", ms[0].Raw)
			}
		})
	}
}

func TestFramerCap(t *testing.T) {
	const max = 1000
	body := func(n int) string { // a valid message of exactly n bytes
		pre, post := `{"jsonrpc":"2.0","id":1,"result":{"s":"`, `"}}`
		return pre + strings.Repeat("x", n-len(pre)-len(post)) + post
	}
	tests := []struct {
		name    string
		in      string
		tooLong bool
	}{
		{"at cap", body(max) + "\n", false},
		{"at cap with CR", body(max) + "\r\n", false},
		{"one over", body(max+1) + "\n", true},
		{"unterminated over", body(max + 1), true},
		{"many lines under cap", strings.Repeat(body(max)+"\n", 300), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFramer(strings.NewReader(tt.in), max)
			f.server = "srv"
			_, err := readAll(t, f)
			if tt.tooLong {
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("err = %v, want ErrLineTooLong", err)
				}
				for _, want := range []string{`"srv"`, "maxLineBytes", "1000"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %s", err, want)
					}
				}
				if CodeOf(err) != CodeProtocol {
					t.Errorf("code %q", CodeOf(err))
				}
				// Sticky.
				if _, err2 := f.Next(); !errors.Is(err2, ErrLineTooLong) {
					t.Errorf("second Next: %v", err2)
				}
			} else if err != io.EOF {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// flood is an endless reader of one byte value and counts what it served.
type flood struct {
	b byte
	n int64
}

func (f *flood) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = f.b
	}
	f.n += int64(len(p))
	return len(p), nil
}

func TestFramerFloodIsBounded(t *testing.T) {
	for _, max := range []int{10, 4096, 1 << 20, DefaultMaxLineBytes} {
		src := &flood{b: 'a'}
		f := NewFramer(src, max)
		_, err := f.ReadLine()
		if !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("max %d: err = %v", max, err)
		}
		if src.n > int64(max+framerChunk) {
			t.Errorf("max %d: read %d bytes before refusing, bound is %d", max, src.n, max+framerChunk)
		}
	}
	// The buffer never exceeds cap+chunk while reading a long valid stream.
	var in bytes.Buffer
	line := `{"jsonrpc":"2.0","method":"x","params":{"s":"` + strings.Repeat("y", 9000) + `"}}` + "\n"
	for range 200 {
		in.WriteString(line)
	}
	f := NewFramer(&in, 10000)
	for {
		if _, err := f.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		if f.Buffered() > 10000+framerChunk {
			t.Fatalf("buffer %d > cap+chunk", f.Buffered())
		}
	}
}

func TestFramerFaults(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error // first error from Next
		code Code
	}{
		{"invalid utf8", "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"s\":\"\xff\"}}\n", ErrInvalidUTF8, CodeProtocol},
		{"invalid utf8 noise", "hello \xc3\x28\n", ErrInvalidUTF8, CodeProtocol},
		{"banner", "Server listening on stdio\n", ErrNoise, CodeProtocol},
		{"json log", `{"level":"info","msg":"hi"}` + "\n", ErrNoise, CodeProtocol},
		{"scalar", "42\n", ErrNoise, CodeProtocol},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}}]` + "\n", ErrBatch, CodeProtocol},
		{"eof mid line", `{"jsonrpc":"2.0","id":1,"res`, io.ErrUnexpectedEOF, CodeClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFramer(strings.NewReader(tt.in), 0).Next()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if CodeOf(err) != tt.code {
				t.Errorf("code = %q, want %q", CodeOf(err), tt.code)
			}
		})
	}
	// The framer stays usable after noise and after a bad line.
	in := "banner\n\xff\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	f := NewFramer(strings.NewReader(in), 0)
	var errs []error
	for {
		m, err := f.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Kind != KindResponse {
			t.Errorf("kind %v", m.Kind)
		}
	}
	if len(errs) != 2 || !errors.Is(errs[0], ErrNoise) || !errors.Is(errs[1], ErrInvalidUTF8) {
		t.Errorf("errors %v", errs)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		kind   Kind
		id     string
		method string
		params string
		result string
		err    string // substring of the error; "" = no error
		noise  bool
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":7,"method":"ping"}`, kind: KindRequest, id: "7", method: "ping"},
		{name: "request string id", line: `{"method":"roots/list","id":"a\"b","jsonrpc":"2.0","params":{}}`, kind: KindRequest, id: `"a\"b"`, method: "roots/list", params: "{}"},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":0.5}}`, kind: KindNotification, method: "notifications/progress", params: `{"progressToken":"p1","progress":0.5}`},
		{name: "params null", line: `{"jsonrpc":"2.0","method":"x","params":null}`, kind: KindNotification, method: "x"},
		{name: "response keeps numbers", line: `{"jsonrpc":"2.0","id":1,"result":{"n":12345678901234567890123,"f":1.000000000000000000001,"e":1e400}}`, kind: KindResponse, id: "1", result: `{"n":12345678901234567890123,"f":1.000000000000000000001,"e":1e400}`},
		{name: "response with spaces", line: ` { "jsonrpc" : "2.0" , "id" : -3 , "result" : [ 1 , { } ] } `, kind: KindResponse, id: "-3", result: `[ 1 , { } ]`},
		{name: "error", line: `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad","data":{"big":18446744073709551616}}}`, kind: KindError, id: "2"},
		{name: "error null id", line: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, kind: KindError, id: "null"},
		{name: "escaped key", line: `{"jsonrpc":"2.0","id":1,"\u006dethod":"ping"}`, kind: KindRequest, id: "1", method: "ping"},
		{name: "escaped method", line: `{"jsonrpc":"2.0","method":"a\/b"}`, kind: KindNotification, method: "a/b"},
		{name: "unicode", line: `{"jsonrpc":"2.0","id":1,"result":{"s":"héllo ✓ 𝄞"}}`, kind: KindResponse, id: "1", result: `{"s":"héllo ✓ 𝄞"}`},
		{name: "unknown members ignored", line: `{"jsonrpc":"2.0","id":1,"result":{},"extra":[1,2,{"a":null}]}`, kind: KindResponse, id: "1", result: `{}`},

		{name: "null request id", line: `{"jsonrpc":"2.0","id":null,"method":"x"}`, err: "request id"},
		{name: "fraction id", line: `{"jsonrpc":"2.0","id":1.5,"result":{}}`, err: "response id"},
		{name: "object id", line: `{"jsonrpc":"2.0","id":{},"result":{}}`, err: "response id"},
		{name: "duplicate id", line: `{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, err: "duplicate \"id\""},
		{name: "duplicate escaped", line: `{"jsonrpc":"2.0","id":1,"\u0069d":2,"result":{}}`, err: "duplicate"},
		{name: "wrong version", line: `{"jsonrpc":"1.0","id":1,"result":{}}`, err: "not \"2.0\""},
		{name: "missing jsonrpc", line: `{"id":1,"result":{}}`, err: "lacks \"jsonrpc\""},
		{name: "result and error", line: `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, err: "both"},
		{name: "neither", line: `{"jsonrpc":"2.0","id":1}`, err: "neither \"result\" nor \"error\""},
		{name: "no id no method", line: `{"jsonrpc":"2.0","result":{}}`, err: "neither \"method\" nor \"id\""},
		{name: "method not string", line: `{"jsonrpc":"2.0","method":5}`, err: "not a string"},
		{name: "params scalar", line: `{"jsonrpc":"2.0","method":"x","params":3}`, err: "params"},
		{name: "method with result", line: `{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, err: "both"},
		{name: "error not object", line: `{"jsonrpc":"2.0","id":1,"error":"x"}`, err: "not an object"},
		{name: "error code fraction", line: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, err: "integer"},
		{name: "error missing message", line: `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, err: "lacks"},

		{name: "trailing garbage", line: `{"jsonrpc":"2.0","id":1,"result":{}} x`, noise: true},
		{name: "truncated", line: `{"jsonrpc":"2.0","id":1,"result":{`, noise: true},
		{name: "bad escape", line: `{"jsonrpc":"2.0","id":1,"result":{"s":"\q"}}`, noise: true},
		{name: "control char", line: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"s\":\"a\tb\"}}", noise: true},
		{name: "leading zero", line: `{"jsonrpc":"2.0","id":1,"result":{"n":01}}`, noise: true},
		{name: "bare word", line: `ready`, noise: true},
		{name: "string", line: `"hello"`, noise: true},
		{name: "deep", line: strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), noise: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Classify([]byte(tt.line))
			switch {
			case tt.noise:
				if !errors.Is(err, ErrNoise) {
					t.Fatalf("err = %v, want noise", err)
				}
				return
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) || CodeOf(err) != CodeProtocol || errors.Is(err, ErrNoise) {
					t.Fatalf("err = %v, want protocol error containing %q", err, tt.err)
				}
				return
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			}
			if m.Kind != tt.kind || string(m.ID) != tt.id || m.Method != tt.method ||
				string(m.Params) != tt.params || string(m.Result) != tt.result {
				t.Errorf("got kind=%v id=%s method=%q params=%s result=%s", m.Kind, m.ID, m.Method, m.Params, m.Result)
			}
		})
	}
}

func TestClassifyErrorObjectIntact(t *testing.T) {
	m, err := Classify([]byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"n":18446744073709551616}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Error.Code != -32022 || m.Error.Message != "Unsupported protocol version" ||
		string(m.Error.Data) != `{"supported":["2026-07-28"],"n":18446744073709551616}` {
		t.Errorf("error object %+v data %s", m.Error, m.Error.Data)
	}
}

func TestIDKey(t *testing.T) {
	for _, tt := range [][2]string{
		{`1`, `1`}, {`"a"`, `"a"`}, {`"\u0061"`, `"a"`}, {`"\/"`, `"/"`},
	} {
		if got := idKey([]byte(tt[0])); got != tt[1] {
			t.Errorf("idKey(%s) = %s, want %s", tt[0], got, tt[1])
		}
	}
}

func TestMember(t *testing.T) {
	obj := []byte(`{"a":1,"isError":"yes","nested":{"isError":true},"\u0062":[2]}`)
	for _, tt := range [][2]string{{"a", "1"}, {"isError", `"yes"`}, {"b", "[2]"}, {"zz", ""}} {
		if got := string(member(obj, tt[0])); got != tt[1] {
			t.Errorf("member(%s) = %q, want %q", tt[0], got, tt[1])
		}
	}
}

// holdsLine says whether the next ReadLine returns without reading: only
// while a whole line is buffered, never after a read error.
func TestFramerHoldsLine(t *testing.T) {
	r, w := io.Pipe()
	f := NewFramer(r, 1024)
	if f.holdsLine() {
		t.Fatal("an empty framer holds a line")
	}
	go func() {
		_, _ = io.WriteString(w, "{\"a\":1}\n{\"b\":2}\n{\"c\"")
		_, _ = io.WriteString(w, ":3}\n")
		w.Close()
	}()
	steps := []struct {
		line  string
		holds bool
	}{{`{"a":1}`, true}, {`{"b":2}`, false}, {`{"c":3}`, false}}
	for _, s := range steps {
		line, err := f.ReadLine()
		if err != nil || string(line) != s.line {
			t.Fatalf("ReadLine: %q %v, want %q", line, err, s.line)
		}
		// The first write holds both whole lines; the third is cut.
		if s.line != `{"c":3}` && f.holdsLine() != s.holds {
			t.Fatalf("after %s: holdsLine %v, want %v", s.line, !s.holds, s.holds)
		}
	}
	if _, err := f.ReadLine(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	if f.holdsLine() {
		t.Fatal("a framer at the end holds a line")
	}
}
