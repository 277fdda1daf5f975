package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/gateway"
)

func TestCallOutputsAndExitCodes(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))

	// Human output: text content as is. Launches lazily, leaves nothing.
	r := sluice(t, "", "call", "fx__echo", "text=hello there")
	want(t, r, exitOK)
	if r.stdout != "hello there\n" {
		t.Fatalf("echo output %q", r.stdout)
	}
	noChildren(t, "call")

	// KEY=VALUE numbers keep their exact text (no float64 on the way).
	r = sluice(t, "", "call", "fx__add", "a=12345678901234567890", "b=1")
	want(t, r, exitOK, "12345678901234567891", "structuredContent:", `"sum": 12345678901234567891`)
	r = sluice(t, "", "call", "fx__add", "a=0.1", "b=0.2", "--json")
	want(t, r, exitOK)
	var raw struct {
		StructuredContent struct {
			Sum json.RawMessage `json:"sum"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || string(raw.StructuredContent.Sum) != "0.3" {
		t.Fatalf("--json must print the raw result with the exact sum 0.3: %v\n%s", err, r)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("--json prints the result as it arrived, on one line:\n%s", r)
	}

	// --args inline, @file and - (stdin).
	want(t, sluice(t, "", "call", "fx__add", "--args", `{"a": 98765432109876543210, "b": 0}`), exitOK, "98765432109876543210")
	argsFile := filepath.Join(w.root, "args.json")
	if err := os.WriteFile(argsFile, []byte(`{"text": "from a file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	want(t, sluice(t, "", "call", "fx__echo", "--args", "@"+argsFile), exitOK, "from a file")
	want(t, sluice(t, `{"text": "from stdin"}`, "call", "--args", "-", "fx__echo"), exitOK, "from stdin")

	// structuredContent only: pretty-printed, numbers exact.
	r = sluice(t, "", "call", "fx__structured")
	want(t, r, exitOK, `"city": "Oslo"`, `"temperature": -3.5`)

	// Needs approval, none possible: refused with the exact remedies.
	r = sluice(t, "", "call", "fx__fail")
	want(t, r, exitRefused, "not approved", "--yes", "approve:", "fx__fail")
	// --yes approves; the tool reports an error: exit 3, content printed.
	r = sluice(t, "", "call", "fx__fail", "--yes")
	want(t, r, exitToolError, "reported an error (isError: true)")
	if strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("a tool error's content must be printed:\n%s", r)
	}

	// Bad input and unknown names: exit 2.
	want(t, sluice(t, "", "call", "fx__nope"), exitUsage, `server fx has no tool "nope"`)
	want(t, sluice(t, "", "call", "nope__echo"), exitUsage, `no server "nope"`)
	want(t, sluice(t, "", "call", "fxecho"), exitUsage, "not a capability name")
	want(t, sluice(t, "", "call", "fx__echo", "=x"), exitUsage, "empty key")
	want(t, sluice(t, "", "call", "fx__echo", "a=1", "a=2"), exitUsage, "given twice")

	// The server breaks the protocol: a gateway failure, exit 1.
	w.writeUser("servers:\n" + fixture(t, "fx") + "approve: [\"fx__*\"]\n")
	want(t, sluice(t, "", "call", "fx__bad_iserror"), exitFailure, "fx__bad_iserror")
	want(t, sluice(t, "", "call", "fx__crash"), exitFailure, "fx__crash")
	noChildren(t, "crash")
}

func TestCallApprovalOnATerminal(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	fakeTerminal(t)
	r := sluice(t, "n\n", "call", "fx__fail", "why=because")
	want(t, r, exitRefused, "fx__fail needs approval", `"why": "because"`, "Approve this call? [y/N]", "declined")
	r = sluice(t, "y\n", "call", "fx__fail")
	want(t, r, exitToolError, "Approve this call? [y/N]", "isError: true")
	// A read-only tool runs without a question.
	r = sluice(t, "", "call", "fx__echo", "text=x")
	want(t, r, exitOK)
	if strings.Contains(r.stderr, "Approve") {
		t.Fatalf("a read tool must not ask:\n%s", r)
	}
	// --args - consumed stdin: no prompt is possible, so the call is refused.
	r = sluice(t, "{}", "call", "fx__fail", "--args", "-")
	want(t, r, exitRefused, "--yes")
	if strings.Contains(r.stderr, "[y/N]") {
		t.Fatalf("no prompt after stdin was read for --args:\n%s", r)
	}
}

func TestKVArgs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
		err  string
	}{
		{nil, "", ""},
		{[]string{"a=1"}, `{"a":1}`, ""},
		{[]string{"n=12345678901234567890", "f=1e400", "d=0.1000"}, `{"n":12345678901234567890,"f":1e400,"d":0.1000}`, ""},
		{[]string{"s=hello", "t=true", "z=null"}, `{"s":"hello","t":true,"z":null}`, ""},
		{[]string{`o={"a":1}`, `l=[1,"x"]`, `q="quoted"`}, `{"o":{"a":1},"l":[1,"x"],"q":"quoted"}`, ""},
		{[]string{"e=", "zip=0123", "eq=a=b", "sp=a b"}, `{"e":"","zip":"0123","eq":"a=b","sp":"a b"}`, ""},
		{[]string{"html=<a>&"}, `{"html":"<a>&"}`, ""},
		{[]string{"bad={"}, `{"bad":"{"}`, ""},
		{[]string{"nokey"}, "", "not KEY=VALUE"},
		{[]string{"=v"}, "", "empty key"},
		{[]string{"a=1", "a=2"}, "", "given twice"},
	} {
		got, err := kvArgs(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: want error %q, got %v", tc.in, tc.err, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %s, %v; want %s", tc.in, got, err, tc.want)
		}
		if len(got) > 0 && !json.Valid(got) {
			t.Errorf("%q: invalid JSON %s", tc.in, got)
		}
	}
}

func FuzzKVArgs(f *testing.F) {
	f.Add("a=1", "b=x")
	f.Add(`o={"a":[1,2]}`, "n=12345678901234567890")
	f.Add("=", "a==")
	f.Add("k=\xff\xfe", `s="\u00e9"`)
	f.Fuzz(func(t *testing.T, a, b string) {
		got, err := kvArgs([]string{a, b})
		if err != nil {
			return
		}
		if !json.Valid(got) || got[0] != '{' {
			t.Fatalf("kvArgs(%q, %q) = %s: not a JSON object", a, b, got)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(got, &m); err != nil || len(m) != 2 {
			t.Fatalf("kvArgs(%q, %q) = %s: want two keys (%v)", a, b, got, err)
		}
	})
}

func TestPrintResult(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"text", `{"content":[{"type":"text","text":"a\nb"}]}`, []string{"a\nb\n"}},
		{"image", `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`, []string{"[image image/png, 3 bytes]"}},
		{"audio", `{"content":[{"type":"audio","data":"` + strings.Repeat("A", 4000) + `","mimeType":"audio/wav"}]}`, []string{"[audio audio/wav, 2.9 KiB (3000 bytes)]"}},
		{"resource text", `{"content":[{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"hello"}}]}`, []string{"[resource file:///a text/plain, text 5 bytes]"}},
		{"resource blob", `{"content":[{"type":"resource","resource":{"uri":"x:1","blob":"AAA="}}]}`, []string{"[resource x:1 (no mimeType), blob 2 bytes]"}},
		{"link", `{"content":[{"type":"resource_link","uri":"file:///b","name":"b","mimeType":"text/x"}]}`, []string{"[resource link] file:///b (b) text/x"}},
		{"unknown", `{"content":[{"type":"hologram"}]}`, []string{"[hologram content"}},
		{"structured", `{"content":[{"type":"text","text":"t"}],"structuredContent":{"n":1.50}}`, []string{"t\nstructuredContent:\n{\n  \"n\": 1.50\n}\n"}},
		{"structured as text once", `{"content":[{"type":"text","text":"{\"n\": 1.50}"}],"structuredContent":{"n":1.50}}`, []string{"{\n  \"n\": 1.50\n}\n"}},
	} {
		var b strings.Builder
		if err := printResult(&b, json.RawMessage(tc.in), false); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.name == "structured as text once" && b.String() != tc.want[0] {
			t.Errorf("%s: printed %q, want it once", tc.name, b.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: output %q lacks %q", tc.name, b.String(), w)
			}
		}
	}
	var b strings.Builder
	if err := printResult(&b, json.RawMessage(`[1]`), false); err == nil {
		t.Fatal("a non-object result must be reported")
	}
}

// FuzzPrintResult: results come from servers, so rendering them must never
// panic, whatever they hold.
func FuzzPrintResult(f *testing.F) {
	f.Add(`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`)
	f.Add(`{"content":[{"type":"resource","resource":null},{"type":"image","data":7}]}`)
	f.Add(`{"content":[1,"x",null,{"type":"resource_link","size":1e999}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var b strings.Builder
		_ = printResult(&b, json.RawMessage(in), true)
	})
}

func TestExitCodeForEveryKind(t *testing.T) {
	for kind, code := range map[gateway.Kind]int{
		gateway.KindBadInput:  exitUsage,
		gateway.KindUnknown:   exitUsage,
		gateway.KindMissing:   exitUsage,
		gateway.KindUntrusted: exitRefused,
		gateway.KindRefused:   exitRefused,
		gateway.KindUpstream:  exitFailure,
		gateway.KindCrashLoop: exitFailure,
		gateway.KindFilter:    exitFailure,
		gateway.KindGateway:   exitFailure,
	} {
		if got := exitFor(&gateway.Error{Kind: kind}); got != code {
			t.Errorf("%s: exit %d, want %d", kind, got, code)
		}
	}
	if got := exitFor(errors.New("plain")); got != exitFailure {
		t.Errorf("plain error: exit %d", got)
	}
}

func TestReadArgs(t *testing.T) {
	for _, tc := range []struct{ src, stdin, want, err string }{
		{`{"a": 1.0}`, "", `{"a": 1.0}`, ""},
		{"  ", "", `{}`, ""},
		{"-", ` {"b": [1]} `, `{"b": [1]}`, ""},
		{"-", "", `{}`, ""},
		{`"x"`, "", "", "not a string"},
		{`1`, "", "", "not a number"},
		{`{"a":1} {}`, "", "", "not valid JSON"},
		{"@", "", "", "cannot read the arguments file"},
	} {
		got, err := readArgs(tc.src, strings.NewReader(tc.stdin))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: want error %q, got %v", tc.src, tc.err, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %s %v, want %s", tc.src, got, err, tc.want)
		}
	}
}

// On a terminal a call's progress notifications are shown on stderr.
func TestCallShowsProgressOnATerminal(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	fakeTerminal(t)
	r := sluice(t, "", "call", "fx__slow", "ms=300", "steps=3", "--yes")
	want(t, r, exitOK, "progress 1/3", "progress 3/3")
	if strings.Contains(r.stdout, "progress") {
		t.Fatalf("progress belongs on stderr:\n%s", r)
	}
}

// SLUICE_LOG_LEVEL sets the JSON log level; at debug the servers' stderr is
// relayed too; a bad value is named and replaced by warn.
func TestLogLevel(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	t.Setenv("SLUICE_LOG_LEVEL", "debug")
	r := sluice(t, "", "call", "fx__stderr", "text=a line from the server", "--yes")
	want(t, r, exitOK, `"level":"DEBUG"`, "[fx] a line from the server")
	if strings.Contains(r.stdout, "DEBUG") {
		t.Fatalf("logs belong on stderr:\n%s", r)
	}
	t.Setenv("SLUICE_LOG_LEVEL", "loud")
	r = sluice(t, "", "call", "fx__echo", "text=x")
	want(t, r, exitOK, `SLUICE_LOG_LEVEL="loud" is not one of debug, info, warn, error`)
	if strings.Contains(r.stderr, "DEBUG") || strings.Contains(r.stderr, "a line from") {
		t.Fatalf("warn level logs no debug lines:\n%s", r)
	}
}

func TestCleanControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nok":     "plain\ttext\nok",
		"\x1b[2Jwiped":        `\x1b[2Jwiped`,
		"over\rwrite":         `over\x0dwrite`,
		"csi\u009b31m":        `csi\u009b31m`,
		"del\x7f":             `del\x7f`,
		"é and 漢字 stay as is": "é and 漢字 stay as is",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	var b strings.Builder
	raw := json.RawMessage(`{"content":[{"type":"text","text":"\u001b]0;pwned\u0007hi"},{"type":"resource_link","uri":"x:\u001b[1m","name":"n"}]}`)
	if err := printResult(&b, raw, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b]0;pwned\x07hi") || !strings.Contains(b.String(), `x:\x1b[1m`) {
		t.Fatalf("piped: text exact, metadata cleaned; got %q", b.String())
	}
	b.Reset()
	if err := printResult(&b, raw, true); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(b.String(), 0x1b) || !strings.Contains(b.String(), `\x1b]0;pwned\x07hi`) {
		t.Fatalf("terminal: everything cleaned; got %q", b.String())
	}
}
