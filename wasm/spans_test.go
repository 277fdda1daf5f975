package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"sluice/wasm/guest"
)

// spliceSpec is the splice test guest with a program: a literal (no
// quotes, no escapes) and triples (op, a, b): 1 = input_json_skip(a),
// 2 = output_input(a, b), 3 = output_write(literal[a:b]).
func spliceSpec(t testing.TB, lit string, ops ...int) Spec {
	t.Helper()
	var b strings.Builder
	b.WriteString(`["` + lit + `"`)
	for _, o := range ops {
		b.WriteString("," + strconv.Itoa(o))
	}
	b.WriteString("]")
	return Spec{Name: "splice", Module: testGuest(t, "splice"), Mode: ModeResultJSON, Config: json.RawMessage(b.String())}
}

// loadSplice loads the splice guest; builtin makes the host treat it as a
// built-in filter (trusted spans apply), as only this package's tests can.
func loadSplice(t testing.TB, h *Host, builtin bool, lit string, ops ...int) *Filter {
	t.Helper()
	f := mustLoad(t, h, spliceSpec(t, lit, ops...))
	f.builtin = builtin
	return f
}

func TestOutputInput(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1, MaxOutputBytes: 4096})
	ctx := context.Background()
	text := strings.Repeat("x", 300)
	in := []byte(`{"content":[{"type":"text","text":"` + text + `"}],"isError":false}`)
	ts := bytes.Index(in, []byte(text)) // first byte of the text
	te := ts + len(text)                // its closing quote
	// head, a literal, 100 bytes of the text, the rest of the input.
	f := loadSplice(t, h, false, "yz", 2, 0, ts, 3, 0, 2, 2, ts, 100, 2, te, len(in)-te)
	out, err := f.Run(ctx, in, Meta{ValidInput: true})
	if err != nil {
		t.Fatal(err)
	}
	want := string(in[:ts]) + "yz" + text[:100] + string(in[te:])
	if out.Status != StatusReplaced || string(out.Data) != want {
		t.Fatalf("got %v %s, want %s", out.Status, out.Data, want)
	}

	// Only the writes: the output_write buffer itself is handed over.
	f = loadSplice(t, h, false, "{}", 3, 0, 2)
	if out, err := f.Run(ctx, in, Meta{}); err != nil || string(out.Data) != "{}" {
		t.Fatalf("got %q, %v", out.Data, err)
	}

	// Out of the input's range: -1, which the guest turns into status 3.
	for _, ops := range [][]int{{2, 0, len(in) + 1}, {2, len(in), 1}, {2, 4294967295, 1}, {2, 0, 4294967295}} {
		f = loadSplice(t, h, false, "", ops...)
		_, err := f.Run(ctx, in, Meta{})
		var re *ReportedError
		if !errors.As(err, &re) || !strings.Contains(re.Message, "negative code") {
			t.Fatalf("ops %v: got %v, want the guest's report of a negative code", ops, err)
		}
	}

	// Over the output cap: the call fails as with output_write.
	big := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("y", 5000) + `"}]}`)
	f = loadSplice(t, h, false, "", 2, 0, 10, 2, 0, len(big))
	if _, err := f.Run(ctx, big, Meta{}); !errors.As(err, new(*OutputTooLargeError)) {
		t.Fatalf("got %v, want OutputTooLargeError", err)
	}

	// A third-party filter's copies are validated like its writes, even
	// with a valid input: a cut inside an escape is caught.
	esc := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat(`ab\"`, 100) + `"}]}`)
	es := bytes.Index(esc, []byte(`ab\"`))
	cut := es + 3 // just past a backslash
	f = loadSplice(t, h, false, "", 1, es-1, 0, 2, 0, cut, 2, len(esc)-3, 3)
	if _, err := f.Run(ctx, esc, Meta{ValidInput: true}); !errors.As(err, new(*InvalidOutputError)) {
		t.Fatalf("got %v, want InvalidOutputError", err)
	}
}

// TestOldABIGuest: a module built before output_input existed (it imports
// only the first revision's functions) loads and runs unchanged.
func TestOldABIGuest(t *testing.T) {
	h := newTestHost(t, nil)
	mod := testGuest(t, "echo")
	cm, err := h.rt.CompileModule(context.Background(), mod)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range cm.ImportedFunctions() {
		if _, n, _ := imp.Import(); n == "output_input" || n == "input_json_skip" || n == "input_find" {
			t.Fatalf("echo imports %s: not a first-revision guest", n)
		}
	}
	cm.Close(context.Background())
	f := mustLoad(t, h, Spec{Name: "echo", Module: mod, Mode: ModeResultJSON})
	in := append([]byte{0}, `{"content":[{"type":"text","text":"hi"}]}`...)
	out, err := f.Run(context.Background(), in, Meta{ValidInput: true})
	if err != nil || out.Status != StatusReplaced || string(out.Data) != string(in[1:]) {
		t.Fatalf("got %v %q, %v", out.Status, out.Data, err)
	}
}

// TestTrustedSpans: with a valid input, a built-in's copies of the inside
// of a string input_json_skip walked over are not validated again, and
// nothing a guest does with its calls gets bytes past the validator that
// would make the output invalid: cuts inside escapes or UTF-8 sequences,
// and "strings" a guest made up by starting a skip at a closing quote.
func TestTrustedSpans(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	ctx := context.Background()
	wrap := func(text string) []byte { return []byte(`{"content":[{"type":"text","text":"` + text + `"}]}`) }
	tail := 3 // `"}]}` minus the closing quote's own byte: in[len-4:] is `"}]}`

	prose := strings.Repeat("naïve café — ok ", 20)
	in := wrap(prose)
	qs := bytes.Index(in, []byte(`"text":"`)) + 7 // the text's opening quote
	f := loadSplice(t, h, true, "", 1, qs, 0, 2, 0, qs+1, 2, qs+1, 100, 2, len(in)-tail-1, tail+1)
	out, err := f.Run(ctx, in, Meta{ValidInput: true})
	if err != nil {
		t.Fatal(err)
	}
	in0, _ := f.pool.get(ctx, f.name) // the instance the call ran on
	in0.state.input = in              // (let go when the call returned)
	trusted := in0.state.trustedSpans(nil)
	f.pool.put(ctx, in0, true)
	if len(trusted) != 1 || trusted[0] != [2]int{qs + 1, qs + 101} {
		t.Fatalf("trusted %v, want [[%d %d]]", trusted, qs+1, qs+101)
	}
	if !json.Valid(out.Data) || !strings.HasPrefix(prose, string(out.Data[qs+1:len(out.Data)-4])) {
		t.Fatalf("output %q", out.Data)
	}

	for _, c := range []struct {
		name string
		in   []byte
		ops  func(in []byte) []int
	}{
		{"cut just past a backslash", wrap(strings.Repeat(`ab\"`, 40)), func(in []byte) []int {
			qs := bytes.Index(in, []byte(`"ab`))
			return []int{1, qs, 0, 2, 0, qs + 1, 2, qs + 1, 67, 2, len(in) - 4, 4}
		}},
		{"cut inside a \\u escape", wrap(strings.Repeat(`a\u00e9`, 40)), func(in []byte) []int {
			qs := bytes.Index(in, []byte(`"a\u`))
			return []int{1, qs, 0, 2, 0, qs + 1, 2, qs + 1, 67, 2, len(in) - 4, 4}
		}},
		{"cut inside a UTF-8 sequence", wrap(strings.Repeat("aé", 60)), func(in []byte) []int {
			qs := bytes.Index(in, []byte(`"aé`))
			return []int{1, qs, 0, 2, 0, qs + 1, 2, qs + 1, 65, 2, len(in) - 4, 4}
		}},
		{"start inside a UTF-8 sequence", wrap(strings.Repeat("aé", 60)), func(in []byte) []int {
			qs := bytes.Index(in, []byte(`"aé`))
			return []int{1, qs, 0, 2, 0, qs + 1, 2, qs + 3, 70, 2, len(in) - 4, 4}
		}},
		{"a skip started at a closing quote", []byte(`{"content":[{"type":"text","text":"ab"}` + strings.Repeat("\n", 80) + `,{"type":"text","text":"cd"}]}`), func(in []byte) []int {
			close := bytes.Index(in, []byte(`ab"`)) + 2
			open := bytes.LastIndex(in, []byte(`"type"`))
			return []int{1, close, 0, 2, 0, close, 2, close + 1, open - close - 1, 2, len(in) - 4, 4}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := loadSplice(t, h, true, "", c.ops(c.in)...)
			out, err := f.Run(ctx, c.in, Meta{ValidInput: true})
			if !errors.As(err, new(*InvalidOutputError)) {
				t.Fatalf("got %v %q, want InvalidOutputError", err, out.Data)
			}
		})
	}
}

func TestCharBoundary(t *testing.T) {
	s := []byte(`"a\\\"b\u00e9cé\n"`)
	// a = 1, \\ = 2-3, \" = 4-5, b = 6, \u00e9 = 7-12, c = 13, é = 14-15, \n = 16-17, " = 18
	want := map[int]bool{1: true, 2: true, 3: false, 4: true, 5: false, 6: true, 7: true, 8: false, 9: false, 10: false, 11: false, 12: false, 13: true, 14: true, 15: false, 16: true, 17: false, 18: true}
	for p := 1; p < len(s); p++ {
		if got := charBoundary(s, 0, p); got != want[p] {
			t.Errorf("charBoundary(%d) = %v, want %v", p, got, want[p])
		}
	}
	// A run of backslashes too long to look through is no boundary.
	long := []byte(`"` + strings.Repeat(`\\`, 40) + `x"`)
	if charBoundary(long, 0, len(long)-2) {
		t.Error("a position after 80 backslashes was taken for a boundary")
	}
}

// FuzzTrustedSplice: whatever a built-in guest does with input_json_skip,
// output_input and output_write on a valid input, what the host accepts is
// a valid result: the trusted spans never let an invalid output through.
func FuzzTrustedSplice(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"`+strings.Repeat(`naïve \"q\" \\ \u00e9 `, 8)+`"}]}`), uint16(35), uint16(40), uint16(70), uint16(3))
	f.Add([]byte(`{"content":[{"type":"text","text":"ab"}`+strings.Repeat(" ", 70)+`,{"type":"text","text":"cd"}]}`), uint16(37), uint16(37), uint16(75), uint16(4))
	h := newTestHost(f, &Options{DisableAfter: -1})
	f.Fuzz(func(t *testing.T, in []byte, skip, from, n, tail uint16) {
		if !json.Valid(in) || !utf8.Valid(in) {
			return // the caller vouches only for valid input
		}
		head := bytes.Index(in, []byte(`"text":"`))
		if head < 0 {
			return
		}
		head += len(`"text":"`)
		t0 := min(int(tail), len(in))
		fl := loadSplice(t, h, true, "", 1, int(skip)%len(in), 0, 2, 0, head, 2, int(from)%len(in), int(n), 2, len(in)-t0, t0)
		out, err := fl.Run(context.Background(), in, Meta{ValidInput: true})
		fl.Close(context.Background())
		if err != nil {
			if !IsFilterFailure(err) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if reason := validateResult(out.Data); reason != "" || !json.Valid(out.Data) {
			t.Fatalf("accepted %q (%s)", out.Data, reason)
		}
	})
}

// FuzzBuiltinShape: on any input, the built-in shape filter answers what
// the same code run natively answers (the same bytes when it shapes, pass
// when it does not; invalid input walked with the host's skip, as the
// built-in walks it), with the input vouched for when it is valid JSON; and
// what it answers is a valid result.
func FuzzBuiltinShape(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), uint16(0))
	}
	f.Add(proseResult(8<<10), uint16(1024))
	f.Add(mcpResult(6<<10, `,"structuredContent":{"a":1},"_meta":{"k":"v"}`), uint16(2000))
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"x","text":"`+strings.Repeat("zé\\n", 900)+`"}},{"type":"text","text":"note"}]}`), uint16(1500))
	h := newTestHost(f, &Options{DisableAfter: -1, Offload: nopHostOffload})
	// A few budgets, loaded before fuzzing starts: a Go guest's first
	// load takes long enough on a busy machine for the fuzzer to take
	// the worker for hung.
	budgets := []int{guest.MinBudget, 1536, 2048, 4096}
	filters := make([]*Filter, len(budgets))
	for i, b := range budgets {
		filters[i] = mustLoad(f, h, Spec{Builtin: "shape", Config: json.RawMessage(fmt.Sprintf(`{"budgetBytes":%d}`, b))})
	}
	f.Fuzz(func(t *testing.T, in []byte, budget uint16) {
		k := int(budget) % len(budgets)
		b, fl := budgets[k], filters[k]
		valid := json.Valid(in) && utf8.Valid(in) // json.Valid does not check UTF-8
		native := &guest.Shaper{Budget: b, Offload: nopOffload}
		if !valid {
			// The built-in walks with input_json_skip, which matches
			// brackets and strings but validates nothing (ABI.md), so on
			// invalid input it may find items where the strict SkipValue
			// finds a syntax error and shapes the input as raw text. Both
			// answers are valid results; the same code is the Shaper
			// walking with the host's skip. On valid input the two skips
			// end every value at the same byte, and the strict one stays
			// the reference.
			native.Skip = func(i int) (int, error) {
				if e := skipJSON(in, i); e >= 0 {
					return e, nil
				}
				return 0, guest.ErrSyntax
			}
		}
		want, shaped, nerr := native.Shape(in)
		out, err := fl.Run(context.Background(), in, Meta{ValidInput: valid})
		switch {
		case err != nil:
			if !IsFilterFailure(err) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if nerr == nil && valid && validateResult(want) == "" {
				t.Fatalf("native shaped %q, the built-in failed: %v", in, err)
			}
		case nerr != nil:
			t.Fatalf("native failed (%v), the built-in answered %v %q", nerr, out.Status, out.Data)
		case !shaped:
			if out.Status != StatusPass {
				t.Fatalf("native passed, the built-in answered %v %q", out.Status, out.Data)
			}
		default:
			if out.Status != StatusReplaced || !bytes.Equal(out.Data, want) {
				t.Fatalf("Shape(%q): native %q, built-in %v %q", in, want, out.Status, out.Data)
			}
			if validateResult(out.Data) != "" {
				t.Fatalf("accepted an invalid result %q", out.Data)
			}
		}
	})
}
