package clitool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sluice/gateway/proc"
)

// argv builds a template: a string is an element, a []any a group.
func argv(es ...any) []Elem {
	out := make([]Elem, 0, len(es))
	for _, e := range es {
		switch v := e.(type) {
		case string:
			out = append(out, Elem{Text: v})
		case []any:
			out = append(out, Elem{Group: argv(v...)})
		default:
			panic("argv: string or []any")
		}
	}
	return out
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func str(t string) *Param { return &Param{Type: t} }

// gitLog is the example declaration.
func gitLog(cmd string) Spec {
	return Spec{
		Name:        "log",
		Description: "Recent commits, newest first",
		Argv:        argv(cmd, "log", "--max-count={limit}", "--format=%H %s", []any{"--author={author}"}),
		Input: []Param{
			{Name: "limit", Type: TypeInteger, Default: raw("10"), Minimum: "1", Maximum: "1000"},
			{Name: "author", Type: TypeString, Description: "Filter by author"},
		},
		Output:      OutputLines,
		Annotations: raw(`{"readOnlyHint": true}`),
	}
}

func gitAdd(cmd string) Spec {
	return Spec{
		Name:  "add",
		Argv:  argv(cmd, "add", "--", "{paths...}"),
		Input: []Param{{Name: "paths", Type: TypeArray, Items: str(TypeString), MinItems: 1, Required: true}},
	}
}

// features covers every template feature; want is the argv after argv[0].
var features = []struct {
	name string
	spec func(cmd string) Spec
	args string
	want []string
}{
	{"defaults", gitLog, `{}`, []string{"log", "--max-count=10", "--format=%H %s"}},
	{"optional group rendered", gitLog, `{"limit": 5, "author": "Ann Lee"}`, []string{"log", "--max-count=5", "--format=%H %s", "--author=Ann Lee"}},
	{"null is absent", gitLog, `{"limit": null, "author": null}`, []string{"log", "--max-count=10", "--format=%H %s"}},
	{"integer rendered exactly", gitLog, `{"limit": 1e2}`, []string{"log", "--max-count=100", "--format=%H %s"}},
	{"integer-valued decimal", gitLog, `{"limit": 7.0}`, []string{"log", "--max-count=7", "--format=%H %s"}},
	{"value with glob and spaces is one element", gitLog, `{"author": "* a b ?"}`, []string{"log", "--max-count=10", "--format=%H %s", "--author=* a b ?"}},
	{"array expands after --", gitAdd, `{"paths": ["-x", "a b", "*.go", ""]}`, []string{"add", "--", "-x", "a b", "*.go", ""}},
	{"boolean group true", boolTool, `{"all": true}`, []string{"ls", "--all", "--color=false"}},
	{"boolean group false", boolTool, `{"all": false, "verbose": true}`, []string{"ls", "-v", "--color=false"}},
	{"boolean groups absent", boolTool, `{}`, []string{"ls", "--color=false"}},
	{"boolean outside a group", boolTool, `{"color": true}`, []string{"ls", "--color=true"}},
	{"boolean default outside a group", boolTool, `{"all": true, "verbose": true}`, []string{"ls", "--all", "-v", "--color=false"}},
	{"nested group needs its own value", nested, `{"until": "b"}`, []string{"x"}},
	{"nested group outer only", nested, `{"since": "a"}`, []string{"x", "--since=a"}},
	{"nested group both", nested, `{"since": "a", "until": "b"}`, []string{"x", "--since=a", "--until=b"}},
	{"mixed placeholders", mixed, `{"a": "x", "b": 3}`, []string{"{a}", "{{.Name}}", "x:3", "pre-x-post", "{a...}", "a{b", "}"}},
	{"array group empty", arrayGroup, `{"f": []}`, []string{"x"}},
	{"array group absent", arrayGroup, `{}`, []string{"x"}},
	{"array group items", arrayGroup, `{"f": ["a", "b"]}`, []string{"x", "--files", "a", "b"}},
	{"array default", arrayDefault, `{}`, []string{"x", "a", "b"}},
	{"number keeps its text", number, `{"r": 0.250}`, []string{"x", "--ratio=0.250"}},
	{"number array", number, `{"r": 1, "ns": [1, 2.5, 3e0]}`, []string{"x", "--ratio=1", "--n", "1", "2.5", "3e0"}},
	{"enum", enumTool, `{"mode": "slow"}`, []string{"x", "--mode=slow"}},
	{"allowDash", dashTool, `{"pattern": "-foo", "n": -3}`, []string{"x", "-e", "-foo", "--offset=-3"}},
	{"unicode kept", gitLog, `{"author": "Zoë \u00e9"}`, []string{"log", "--max-count=10", "--format=%H %s", "--author=Zoë é"}},
}

func boolTool(cmd string) Spec {
	return Spec{Name: "ls", Argv: argv(cmd, "ls", []any{"--all{all}"}, []any{"{verbose}", "-v"}, "--color={color}"),
		Input: []Param{{Name: "all", Type: TypeBoolean}, {Name: "verbose", Type: TypeBoolean}, {Name: "color", Type: TypeBoolean, Default: raw("false")}}}
}

func nested(cmd string) Spec {
	return Spec{Name: "n", Argv: argv(cmd, "x", []any{"--since={since}", []any{"--until={until}"}}),
		Input: []Param{{Name: "since", Type: TypeString}, {Name: "until", Type: TypeString}}}
}

func mixed(cmd string) Spec {
	return Spec{Name: "m", Argv: argv(cmd, "{{a}}", "{{.Name}}", "{a}:{b}", "pre-{a}-post", "{{a...}}", "a{b", "}"),
		Input: []Param{{Name: "a", Type: TypeString, Required: true}, {Name: "b", Type: TypeInteger, Required: true}}}
}

func arrayGroup(cmd string) Spec {
	return Spec{Name: "a", Argv: argv(cmd, "x", []any{"--files", "{f...}"}),
		Input: []Param{{Name: "f", Type: TypeArray, Items: str(TypeString)}}}
}

func arrayDefault(cmd string) Spec {
	return Spec{Name: "a", Argv: argv(cmd, "x", "{f...}"),
		Input: []Param{{Name: "f", Type: TypeArray, Items: str(TypeString), Default: raw(`["a","b"]`)}}}
}

func number(cmd string) Spec {
	return Spec{Name: "num", Argv: argv(cmd, "x", "--ratio={r}", []any{"--n", "{ns...}"}),
		Input: []Param{{Name: "r", Type: TypeNumber, Required: true, Minimum: "0", Maximum: "1e1"},
			{Name: "ns", Type: TypeArray, Items: &Param{Type: TypeNumber, Minimum: "0"}}}}
}

func enumTool(cmd string) Spec {
	return Spec{Name: "e", Argv: argv(cmd, "x", "--mode={mode}"),
		Input: []Param{{Name: "mode", Type: TypeString, Enum: []json.RawMessage{raw(`"fast"`), raw(`"slow"`)}, Default: raw(`"fast"`)}}}
}

func dashTool(cmd string) Spec {
	return Spec{Name: "d", Argv: argv(cmd, "x", "-e", "{pattern}", []any{"--offset={n}"}),
		Input: []Param{{Name: "pattern", Type: TypeString, Required: true, AllowDash: true}, {Name: "n", Type: TypeInteger, AllowDash: true}}}
}

// stub compiles spec to run the test binary in the given mode.
func stub(t *testing.T, spec Spec, mode string, env map[string]string) *Tool {
	t.Helper()
	spec.Env = map[string]string{childModeEnv: mode}
	for k, v := range env {
		spec.Env[k] = v
	}
	if spec.KillGrace == 0 {
		spec.KillGrace = 300 * time.Millisecond
	}
	if spec.StdinGrace == 0 {
		spec.StdinGrace = 50 * time.Millisecond
	}
	tool, err := Compile(spec)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return tool
}

// structured returns a result's structuredContent and checks isError.
func decodeResult(t *testing.T, res json.RawMessage) (text string, sc json.RawMessage, isError bool) {
	t.Helper()
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("result %s: want one text content block", res)
	}
	return r.Content[0].Text, r.StructuredContent, r.IsError
}

// TestArgvFeatures runs the stub for every template feature and compares
// the argv it received.
func TestArgvFeatures(t *testing.T) {
	exe := self(t)
	for _, tc := range features {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec(exe)
			spec.Output = OutputText
			tool := stub(t, spec, "argv", nil)
			dry, err := tool.Argv(raw(tc.args))
			if err != nil {
				t.Fatalf("Argv: %v", err)
			}
			if dry[0] != exe || !reflect.DeepEqual(dry[1:], tc.want) {
				t.Fatalf("Argv = %q, want %q after the command", dry, tc.want)
			}
			res, err := tool.Call(context.Background(), raw(tc.args))
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			text, _, isErr := decodeResult(t, res)
			if isErr {
				t.Fatalf("isError: %s", text)
			}
			var got []string
			if err := json.Unmarshal([]byte(text), &got); err != nil {
				t.Fatalf("stub printed %q: %v", text, err)
			}
			if got == nil {
				got = []string{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("stub got argv %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRefusals checks that every refused call names the argument and the
// rule, and that the stub never ran.
func TestRefusals(t *testing.T) {
	exe := self(t)
	cases := []struct {
		name   string
		spec   func(string) Spec
		args   string
		arg    string
		reason string
	}{
		{"dash value", gitLog, `{"author": "-x"}`, "author", ReasonDash},
		{"dash value in mixed element", gitLog, `{"author": "--exec=rm"}`, "author", ReasonDash},
		{"negative number without allowDash", mixed, `{"a": "x", "b": -1}`, "b", ReasonDash},
		{"dash before --", dashBeforeDD, `{"p": ["-rf"]}`, "p", ReasonDash},
		{"NUL in string", gitLog, `{"author": "a\u0000b"}`, "author", ReasonNUL},
		{"NUL in array item", gitAdd, `{"paths": ["ok", "a\u0000"]}`, "paths", ReasonNUL},
		{"missing required", gitAdd, `{}`, "paths", ReasonMissing},
		{"null required", gitAdd, `{"paths": null}`, "paths", ReasonMissing},
		{"string for integer", gitLog, `{"limit": "5"}`, "limit", ReasonType},
		{"fraction for integer", gitLog, `{"limit": 1.5}`, "limit", ReasonType},
		{"huge exponent", gitLog, `{"limit": 1e999999999}`, "limit", ReasonType},
		{"string for array", gitAdd, `{"paths": "a"}`, "paths", ReasonType},
		{"number in string array", gitAdd, `{"paths": [1]}`, "paths", ReasonType},
		{"string for boolean", boolTool, `{"all": "yes"}`, "all", ReasonType},
		{"object for string", gitLog, `{"author": {}}`, "author", ReasonType},
		{"below minimum", gitLog, `{"limit": 0}`, "limit", ReasonRange},
		{"above maximum", gitLog, `{"limit": 1001}`, "limit", ReasonRange},
		{"below minItems", gitAdd, `{"paths": []}`, "paths", ReasonItems},
		{"not in enum", enumTool, `{"mode": "medium"}`, "mode", ReasonEnum},
		{"item below minimum", number, `{"r": 1, "ns": [-0.5]}`, "ns", ReasonRange},
		{"unknown argument", gitLog, `{"limt": 5}`, "limt", ReasonUnknown},
		{"not an object", gitLog, `[1]`, "", ReasonNotObject},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log, runs := runLog(t)
			tool := stub(t, tc.spec(exe), "argv", map[string]string{runLogEnv: log})
			_, err := tool.Call(context.Background(), raw(tc.args))
			var ae *ArgError
			if !errors.As(err, &ae) || !errors.Is(err, ErrArgument) {
				t.Fatalf("Call error = %v, want *ArgError", err)
			}
			if ae.Arg != tc.arg || ae.Reason != tc.reason {
				t.Fatalf("ArgError{Arg: %q, Reason: %q} (%v), want %q %q", ae.Arg, ae.Reason, ae, tc.arg, tc.reason)
			}
			if strings.Contains(err.Error(), "\x00") {
				t.Fatalf("error text carries a NUL: %q", err)
			}
			if r := runs(); r != nil {
				t.Fatalf("a refused call ran the command: %q", r)
			}
			res := ErrorResult(err)
			if text, _, isErr := decodeResult(t, res); !isErr || text != err.Error() {
				t.Fatalf("ErrorResult = %s", res)
			}
		})
	}
}

func dashBeforeDD(cmd string) Spec {
	return Spec{Name: "rm", Argv: argv(cmd, "rm", "{p...}", "--"),
		Input: []Param{{Name: "p", Type: TypeArray, Items: str(TypeString)}}}
}

func TestEveryProblemReported(t *testing.T) {
	tool := stub(t, gitLog(self(t)), "argv", nil)
	_, err := tool.Argv(raw(`{"limit": 0, "author": 3, "zzz": 1}`))
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ae *ArgError
		if !errors.As(e, &ae) {
			t.Fatalf("%v is not an *ArgError", e)
		}
		got = append(got, ae.Arg+":"+ae.Reason)
	}
	want := []string{"limit:range", "author:type", "zzz:unknown"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("problems %q, want %q", got, want)
	}
}

func TestCompileErrors(t *testing.T) {
	s := func(es []Elem, in ...Param) Spec { return Spec{Name: "t", Argv: es, Input: in} }
	str := Param{Name: "s", Type: TypeString}
	req := Param{Name: "s", Type: TypeString, Required: true}
	arr := Param{Name: "a", Type: TypeArray, Items: &Param{Type: TypeString}}
	cases := []struct {
		name  string
		spec  Spec
		field string
		msg   string
	}{
		{"bad name", Spec{Name: "a b", Argv: argv("x")}, "", "tool name"},
		{"empty argv", s(nil), "argv", "empty"},
		{"placeholder in argv[0]", s(argv("{s}"), req), "argv[0]", "literal command"},
		{"relative command", s(argv("bin/x")), "argv[0]", "relative"},
		{"group as argv[0]", s(argv([]any{"x"})), "argv[0]", "literal"},
		{"unknown placeholder", s(argv("x", "--a={nope}")), "argv[1]", "names no input"},
		{"unused input", s(argv("x"), req), "input.s", "never used"},
		{"optional outside group", s(argv("x", "{s}"), str), "argv[1]", "outside any optional group"},
		{"array not expanded", s(argv("x", "{a}"), arr), "argv[1]", "expand it"},
		{"expansion mixed", s(argv("x", "-f{a...}"), arr), "argv[1]", "cannot be mixed"},
		{"expansion of a string", s(argv("x", "{s...}"), req), "argv[1]", "needs an array"},
		{"empty group", s(argv("x", []any{}), req), "argv[1]", "empty"},
		{"group without placeholder", s(argv("x", "{s}", []any{"--v"}), req), "argv[2]", "no placeholder"},
		{"nested field path", s(argv("x", []any{"{s}", []any{"--q={nope}"}}), str), "argv[1][1][0]", "names no input"},
		{"duplicate input", s(argv("x", "{s}"), req, req), "input.s", "twice"},
		{"bad input name", s(argv("x"), Param{Name: "a-b", Type: TypeString}), "input.a-b", "not valid"},
		{"missing type", s(argv("x", "{s}"), Param{Name: "s", Required: true}), "input.s.type", "required"},
		{"unknown type", s(argv("x", "{s}"), Param{Name: "s", Type: "object", Required: true}), "input.s.type", "unknown type"},
		{"min above max", s(argv("x", "{n}"), Param{Name: "n", Type: TypeInteger, Required: true, Minimum: "5", Maximum: "4"}), "input.n.minimum", "above maximum"},
		{"minimum on string", s(argv("x", "{s}"), Param{Name: "s", Type: TypeString, Required: true, Minimum: "1"}), "input.s.minimum", "integer and number"},
		{"bad number text", s(argv("x", "{n}"), Param{Name: "n", Type: TypeInteger, Required: true, Minimum: "0x10"}), "input.n.minimum", "not a JSON number"},
		{"default out of range", s(argv("x", "{n}"), Param{Name: "n", Type: TypeInteger, Default: raw("0"), Minimum: "1"}), "input.n.default", "below the minimum"},
		{"default wrong type", s(argv("x", "{n}"), Param{Name: "n", Type: TypeInteger, Default: raw(`"1"`)}), "input.n.default", "expected an integer"},
		{"enum wrong type", s(argv("x", "{s}"), Param{Name: "s", Type: TypeString, Required: true, Enum: []json.RawMessage{raw("1")}}), "input.s.enum[0]", "expected a string"},
		{"array without items", s(argv("x", "{a...}"), Param{Name: "a", Type: TypeArray}), "input.a.items", "needs items"},
		{"array of arrays", s(argv("x", "{a...}"), Param{Name: "a", Type: TypeArray, Items: &Param{Type: TypeArray}}), "input.a.items.type", "not supported"},
		{"minItems on string", s(argv("x", "{s}"), Param{Name: "s", Type: TypeString, Required: true, MinItems: 1}), "input.s.minItems", "array inputs only"},
		{"bad output", Spec{Name: "t", Argv: argv("x"), Output: "yaml"}, "output", "unknown output"},
		{"annotations not an object", Spec{Name: "t", Argv: argv("x"), Annotations: raw("[1]")}, "annotations", "not a JSON object"},
		{"maxConcurrent too high", Spec{Name: "t", Argv: argv("x"), MaxConcurrent: 1000}, "maxConcurrent", "out of range"},
		{"NUL in element", s(argv("x", "a\x00")), "argv[1]", "NUL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Server = "srv"
			_, err := Compile(tc.spec)
			var se *SpecError
			if !errors.As(err, &se) || !errors.Is(err, ErrSpec) {
				t.Fatalf("Compile error = %v, want *SpecError", err)
			}
			if se.Field != tc.field || !strings.Contains(se.Msg, tc.msg) || se.Server != "srv" {
				t.Fatalf("SpecError{Field: %q, Msg: %q, Server: %q}, want field %q and a message with %q", se.Field, se.Msg, se.Server, tc.field, tc.msg)
			}
		})
	}
}

func TestDefinition(t *testing.T) {
	tool, err := Compile(gitLog("git"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"log","description":"Recent commits, newest first",` +
		`"inputSchema":{"type":"object","properties":{` +
		`"limit":{"type":"integer","default":10,"minimum":1,"maximum":1000},` +
		`"author":{"type":"string","description":"Filter by author"}},"additionalProperties":false},` +
		`"outputSchema":{"type":"object","properties":{"lines":{"type":"array","items":{"type":"string"}}},"required":["lines"]},` +
		`"annotations":{"readOnlyHint":true}}`
	if got := string(tool.Definition()); got != want {
		t.Fatalf("Definition =\n%s\nwant\n%s", got, want)
	}
	add, err := Compile(gitAdd("git"))
	if err != nil {
		t.Fatal(err)
	}
	want = `{"name":"add","description":"Runs git add -- {paths...}.","inputSchema":{"type":"object","properties":{` +
		`"paths":{"type":"array","minItems":1,"maxItems":1024,"items":{"type":"string"}}},"required":["paths"],"additionalProperties":false}}`
	if got := string(add.Definition()); got != want {
		t.Fatalf("Definition =\n%s\nwant\n%s", got, want)
	}
}

func TestOutputModes(t *testing.T) {
	exe := self(t)
	t.Run("lines", func(t *testing.T) {
		tool := stub(t, gitLog(exe), "lines", nil)
		res, err := tool.Call(context.Background(), raw(`{"limit": 3}`))
		if err != nil {
			t.Fatal(err)
		}
		text, sc, isErr := decodeResult(t, res)
		if isErr || text != "log\n--max-count=3\n--format=%H %s\n" || string(sc) != `{"lines":["log","--max-count=3","--format=%H %s"]}` {
			t.Fatalf("result %s", res)
		}
	})
	t.Run("json object", func(t *testing.T) {
		spec := gitAdd(exe)
		spec.Output = OutputJSON
		res, err := stub(t, spec, "argv-object", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, sc, isErr := decodeResult(t, res); isErr || string(sc) != `{"argv":["add","--","a"],"n":3}` {
			t.Fatalf("result %s", res)
		}
	})
	t.Run("json array is wrapped", func(t *testing.T) {
		spec := gitAdd(exe)
		spec.Output = OutputJSON
		res, err := stub(t, spec, "argv", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, sc, _ := decodeResult(t, res); string(sc) != `{"result":["add","--","a"]}` {
			t.Fatalf("result %s", res)
		}
	})
	t.Run("json parse failure", func(t *testing.T) {
		spec := gitAdd(exe)
		spec.Output = OutputJSON
		_, err := stub(t, spec, "text", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
		var oe *OutputError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), "stdout is not JSON") {
			t.Fatalf("err = %v, want an OutputError about JSON", err)
		}
	})
	t.Run("text", func(t *testing.T) {
		res, err := stub(t, gitAdd(exe), "text", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
		if err != nil {
			t.Fatal(err)
		}
		if text, sc, isErr := decodeResult(t, res); isErr || text != "not json {" || sc != nil {
			t.Fatalf("result %s", res)
		}
	})
}

func TestNonZeroExit(t *testing.T) {
	res, err := stub(t, gitAdd(self(t)), "fail", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	text, _, isErr := decodeResult(t, res)
	if !isErr || !strings.Contains(text, "exited with status 3") || !strings.Contains(text, "err line 30") ||
		!strings.Contains(text, "err line 11") || strings.Contains(text, "err line 10\n") {
		t.Fatalf("result text %q: want status 3 and the last 20 stderr lines", text)
	}
}

func TestStdoutCap(t *testing.T) {
	spec := gitAdd(self(t))
	spec.MaxOutputBytes = 10000
	_, err := stub(t, spec, "flood", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
	var oe *OutputError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "10000-byte cap") {
		t.Fatalf("err = %v, want the stdout cap", err)
	}
}

func TestCwdAndEnv(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	spec := gitAdd(self(t))
	spec.Root, spec.Dir = root, "sub"
	res, err := stub(t, spec, "pwd-env", map[string]string{"STUB_GREETING": "hi there"}).Call(context.Background(), raw(`{"paths": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(sub)
	if text, _, _ := decodeResult(t, res); text != real+"\nhi there\n" {
		t.Fatalf("stub saw %q, want cwd %s and the declared env", text, real)
	}
	spec.Dir = "../.."
	_, err = stub(t, spec, "pwd-env", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
	if !errors.Is(err, proc.ErrCwdEscape) {
		t.Fatalf("err = %v, want the cwd containment refusal", err)
	}
}

func TestCommandResolution(t *testing.T) {
	bin, decoy := t.TempDir(), t.TempDir()
	// A PATH in the declared env never decides what runs.
	if err := os.Symlink("/bin/false", filepath.Join(decoy, "stubcli")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	spec := gitAdd("stubcli")
	mk := func(allow *proc.AllowList) *Tool {
		s := spec
		s.AllowCommands = allow
		s.Env = map[string]string{"PATH": decoy, childModeEnv: "argv"}
		tool, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		return tool
	}
	tool := mk(nil)
	if _, err := tool.Call(context.Background(), raw(`{"paths": ["a"]}`)); !errors.Is(err, proc.ErrCommandNotFound) {
		t.Fatalf("err = %v, want command not found", err)
	}
	if err := os.Symlink(self(t), filepath.Join(bin, "stubcli")); err != nil {
		t.Fatal(err)
	}
	// A failed resolution is not cached: the program installed since is found.
	res, err := tool.Call(context.Background(), raw(`{"paths": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if text, _, _ := decodeResult(t, res); text != `["add","--","a"]` {
		t.Fatalf("stub printed %q", text)
	}
	other, _ := proc.ParseAllowList("git,gh")
	if _, err := mk(other).Call(context.Background(), raw(`{"paths": ["a"]}`)); !errors.Is(err, proc.ErrCommandNotAllowed) {
		t.Fatalf("err = %v, want the allow-list refusal", err)
	}
	ok, _ := proc.ParseAllowList("STUBCLI")
	if _, err := mk(ok).Call(context.Background(), raw(`{"paths": ["a"]}`)); err != nil {
		t.Fatalf("allowed command: %v", err)
	}
}

// TestTimeoutTearsDownGroup: a CLI that ignores SIGTERM and leaves a
// grandchild that ignores SIGTERM too is stopped at its timeout, and
// neither process survives.
//
// The stub must have started its grandchild before the timeout fires, or
// there is no grandchild to check; on a machine so loaded that it had not
// (no pids recorded), the run is repeated with twice the timeout. Every
// run asserts the same: the call times out and nothing it started lives.
func TestTimeoutTearsDownGroup(t *testing.T) {
	for timeout := 1500 * time.Millisecond; ; timeout *= 2 {
		pids := filepath.Join(t.TempDir(), "pids")
		spec := gitAdd(self(t))
		spec.Timeout = timeout
		tool := stub(t, spec, "grandchild", map[string]string{"STUB_PIDS": pids})
		_, err := tool.Call(context.Background(), raw(`{"paths": ["a"]}`))
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		if _, err := os.Stat(pids); os.IsNotExist(err) && timeout < 20*time.Second {
			t.Logf("the stub had not started its grandchild within %v; again with %v", timeout, 2*timeout)
			continue
		}
		leader, grandchild := readPids(t, pids)
		if !gone(leader) || !gone(grandchild) {
			t.Fatalf("leader %d alive=%v, grandchild %d alive=%v after the timeout", leader, alive(leader), grandchild, alive(grandchild))
		}
		return
	}
}

func TestCancelTearsDownGroup(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	tool := stub(t, gitAdd(self(t)), "grandchild", map[string]string{"STUB_PIDS": pids})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := tool.Call(ctx, raw(`{"paths": ["a"]}`))
		done <- err
	}()
	waitFile(t, pids)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	leader, grandchild := readPids(t, pids)
	if !gone(leader) || !gone(grandchild) {
		t.Fatalf("leader %d or grandchild %d survived the cancelled call", leader, grandchild)
	}
}

func TestMaxConcurrent(t *testing.T) {
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	spec := gitAdd(self(t))
	spec.MaxConcurrent = 1
	tool := stub(t, spec, "block", map[string]string{"STUB_STARTED": started, "STUB_RELEASE": release})
	first := make(chan error, 1)
	go func() {
		_, err := tool.Call(context.Background(), raw(`{"paths": ["a"]}`))
		first <- err
	}()
	waitFile(t, started)
	// The only slot is taken: a second call waits inside its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := tool.Call(ctx, raw(`{"paths": ["b"]}`)); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "waiting for one of its 1 concurrent runs") {
		t.Fatalf("second call: %v, want a timeout while waiting for a slot", err)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
	// The slot is free again.
	os.Remove(started)
	if _, err := tool.Call(context.Background(), raw(`{"paths": ["c"]}`)); err != nil {
		t.Fatalf("third call: %v", err)
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}

func TestProgramIsRunAsResolved(t *testing.T) {
	spec := gitAdd("any-name")
	spec.Program = self(t)
	res, err := stub(t, spec, "argv", nil).Call(context.Background(), raw(`{"paths": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if text, _, _ := decodeResult(t, res); text != `["add","--","a"]` {
		t.Fatalf("stub printed %q", text)
	}
	// The allow-list still applies to the declared name.
	spec.AllowCommands, _ = proc.ParseAllowList("git")
	if _, err := stub(t, spec, "argv", nil).Call(context.Background(), raw(`{"paths": ["a"]}`)); !errors.Is(err, proc.ErrCommandNotAllowed) {
		t.Fatalf("err = %v, want the allow-list refusal", err)
	}
}
