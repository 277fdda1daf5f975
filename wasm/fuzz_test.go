package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"sluice/wasm/guest"
)

var jsonSeeds = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	`{"content":[{"type":"text","text":"a\"b\\\\"}],"isError":true,"structuredContent":{"a":[1,2.5e-3,null]}}`,
	`{"content":[]}`, `{"content":{}}`, `{"content":[1]}`, `{"content":[{"text":"x"}]}`,
	`{"content":[{"type":1}]}`, `{"isError":"true","content":[]}`, `[]`, `"x"`, `-0.0e+1`, `{`, `{"a":}`,
	"{\"content\":[]}\x00", "\"\xff\"", `"\u12"`, `{"content":[]} {}`, `1.`, `01`, `"\/"`,
}

func FuzzValidateResult(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
		if validateResult(b) != "" {
			return
		}
		if !json.Valid(b) || !utf8.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("accepted %q: %v", b, err)
		}
		// content may be absent (a result may carry only
		// structuredContent); when present it is an array of items.
		var items []map[string]json.RawMessage
		if c, ok := top["content"]; ok {
			if err := json.Unmarshal(c, &items); err != nil || items == nil {
				t.Fatalf("accepted %q with a content that is not an array: %v", b, err)
			}
		}
		for _, it := range items {
			if typ, ok := it["type"]; !ok || typ[0] != '"' {
				t.Fatalf("accepted an item without a string type: %q", b)
			}
		}
		if sc, ok := top["structuredContent"]; ok && sc[0] != '{' {
			t.Fatalf("accepted non-object structuredContent: %q", b)
		}
		if e, ok := top["isError"]; ok && string(e) != "true" && string(e) != "false" {
			t.Fatalf("accepted non-boolean isError: %q", b)
		}
	})
}

func FuzzSkipJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), 0)
	}
	f.Add([]byte(`  {"a":"\\\\\""}  `), 2)
	f.Fuzz(func(t *testing.T, b []byte, off int) {
		end := skipJSON(b, off)
		if end < -1 || end > len(b) || (end >= 0 && off >= 0 && end <= off) {
			t.Fatalf("skipJSON(%q, %d) = %d", b, off, end)
		}
		if off == 0 && json.Valid(b) {
			want := len(bytes.TrimRight(b, " \t\r\n"))
			if end != want {
				t.Fatalf("skipJSON(%q) = %d, want %d", b, end, want)
			}
		}
	})
}

func FuzzMetaEncode(f *testing.F) {
	f.Add("fs", "read_file", "context", "req-1", "text/plain", 3)
	f.Add("\xff\x00\"\\", "\u2028\u2029", "", "\n", "", -1)
	f.Fuzz(func(t *testing.T, server, tool, stage, req, mime string, item int) {
		for _, mode := range []Mode{ModeText, ModeResultJSON} {
			m := Meta{Server: server, Tool: tool, Stage: stage, RequestID: req, MimeType: mime, Item: item}
			b := m.encode(mode, 10, 20)
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("meta %q is not JSON: %v", b, err)
			}
			check := func(key, want string) {
				if want == "" {
					if _, ok := got[key]; ok {
						t.Fatalf("empty %s encoded", key)
					}
					return
				}
				if got[key] != string([]rune(want)) { // each invalid byte becomes U+FFFD
					t.Fatalf("%s = %q, want %q", key, got[key], want)
				}
			}
			check("server", server)
			check("tool", tool)
			check("stage", stage)
			check("requestId", req)
			if got["abi"] != float64(1) || got["mode"] != string(mode) {
				t.Fatalf("meta %s", b)
			}
		}
	})
}

func FuzzNormalizeConfig(f *testing.F) {
	for _, s := range append(jsonSeeds, `{"budgetBytes": 16384}`, ` { "a" : [ 1 , 2 ] } `, `123456789012345678901234567890`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := normalizeConfig(raw)
		if err != nil {
			if json.Valid(raw) && utf8.Valid(raw) {
				t.Fatalf("rejected valid config %q: %v", raw, err)
			}
			return
		}
		if len(raw) > 0 && !json.Valid(out) {
			t.Fatalf("normalized %q to invalid %q", raw, out)
		}
		again, err := normalizeConfig(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
	})
}

// FuzzGuestOutput drives arbitrary guest output and status through the host
// (the echo guest returns the first byte as status and the rest as output).
func FuzzGuestOutput(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(append([]byte{0}, s...))
	}
	f.Add([]byte{2, 'n', 'o'})
	f.Add([]byte{3, 0xff, '\n'})
	f.Add([]byte{9})
	h := newTestHost(f, &Options{DisableAfter: -1, MaxOutputBytes: 1 << 16})
	fr := mustLoad(f, h, Spec{Name: "echo-json", Module: testGuest(f, "echo"), Mode: ModeResultJSON})
	ft := mustLoad(f, h, Spec{Name: "echo-text", Module: testGuest(f, "echo")})
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, fl := range []*Filter{fr, ft} {
			out, err := fl.Run(context.Background(), in, Meta{})
			if err != nil {
				if !IsFilterFailure(err) && !errors.Is(err, ErrInputTooLarge) {
					t.Fatalf("untyped error %T: %v", err, err)
				}
				continue
			}
			switch out.Status {
			case StatusReplaced:
				if fl.Mode() == ModeResultJSON && (validateResult(out.Data) != "" || !json.Valid(out.Data)) {
					t.Fatalf("accepted invalid result %q", out.Data)
				}
				if !utf8.Valid(out.Data) {
					t.Fatalf("accepted invalid UTF-8 %q", out.Data)
				}
			case StatusBlocked:
				if !utf8.ValidString(out.Reason) || strings.ContainsAny(out.Reason, "\n\r\x00") || len(out.Reason) > 3*maxErrorBytes {
					t.Fatalf("unsafe reason %q", out.Reason)
				}
			case StatusPass:
				if !bytes.Equal(out.Data, in) {
					t.Fatal("pass changed data")
				}
			}
		}
	})
}

// FuzzInputFind: the host's input_find and the guest SDK's native search
// (the same algorithm, written twice because the packages may not import
// each other) report the same records, with the same resumption.
func FuzzInputFind(f *testing.F) {
	f.Add([]byte(`{"a":"x AKIA y ghp_ \u0041","AKIA":["token pass"]}`), uint8(3))
	f.Add([]byte(`"unterminated AKIA`), uint8(1))
	f.Add([]byte(`["\"aws\\\"secret","Bearer"]`), uint8(2))
	keys := []byte("akia\nghp_\n\\u\naws\nsecret\ntoken\npass\nbearer\n-----begin")
	f.Fuzz(func(t *testing.T, in []byte, limit uint8) {
		max := int(limit%8) + 1
		hf, err := newKeyFinder(keys)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]guest.FindRecord, max)
		off, from := 0, 0
		for round := 0; round < 10000; round++ {
			raw, hn := hf.findInStrings(in, off, from, max, nil)
			gn, gerr := guest.InputFind(in, off, from, keys, buf)
			if hn < 0 {
				if gerr == nil {
					t.Fatalf("host: unterminated string; guest: %d records", gn)
				}
				return
			}
			if gerr != nil || gn != hn {
				t.Fatalf("host %d records, guest %d (%v)", hn, gn, gerr)
			}
			for i := 0; i < hn; i++ {
				rec := raw[16*i : 16*i+16]
				h := guest.FindRecord{Start: le32(rec), End: le32(rec[4:]), Pos: le32(rec[8:]), Key: le32(rec[12:])}
				if h != buf[i] {
					t.Fatalf("record %d: host %+v, guest %+v", i, h, buf[i])
				}
			}
			if hn < max {
				return
			}
			off, from = int(buf[hn-1].Start), int(buf[hn-1].Pos)+1
		}
		t.Fatal("no progress")
	})
}

func le32(b []byte) int32 {
	return int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}

// FuzzBuiltinRedact: on any JSON input, the built-in redact filter
// (compiled without termination checks, run on its own goroutine) answers
// exactly what the same code run natively answers: the same bytes when it
// masks something, pass when it does not, a failure when the native code
// errs.
func FuzzBuiltinRedact(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"content":[{"type":"text","text":"id AKIAIOSF"},{"type":"text","text":"ODNN7EXAMPLE x"}]}`))
	f.Add([]byte(`{"cont\u0065nt":[{"type":"t\u0065xt","t\u0065xt":"key AKIAIOSFODNN7EXAMPLE"}],"AKIAIOSFODNN7EXAMPLE":1}`))
	f.Add(secretResult(4 << 10))
	h := newTestHost(f, &Options{DisableAfter: -1})
	fl := mustLoad(f, h, Spec{Builtin: "redact"})
	native, err := guest.NewRedactor(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, changed, nerr := native.RedactResult(in)
		out, err := fl.Run(context.Background(), in, Meta{})
		if err != nil && !IsFilterFailure(err) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if !json.Valid(in) {
			// Results reach filters parsed: the host's skip does not
			// validate scalars, so on malformed input the two may differ.
			return
		}
		switch {
		case nerr != nil:
			if err == nil {
				t.Fatalf("native failed (%v), the built-in answered %v %q", nerr, out.Status, out.Data)
			}
		case err != nil:
			// The host refuses output that is not a valid result; native
			// code has no such check.
			if !json.Valid(want) || validateResult(want) != "" {
				return
			}
			t.Fatalf("native redacted %q, the built-in failed: %v", in, err)
		case !changed:
			if out.Status != StatusPass {
				t.Fatalf("native passed %q, the built-in answered %v %q", in, out.Status, out.Data)
			}
		default:
			if out.Status != StatusReplaced || !bytes.Equal(out.Data, want) {
				t.Fatalf("RedactResult(%q): native %q, built-in %v %q", in, want, out.Status, out.Data)
			}
		}
	})
}
