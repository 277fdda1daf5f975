package front

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// A _meta read through the memo is read exactly as plainMembers and
// numbersFit read it, whatever came before it on the connection: the same
// bytes again (a hit, in a fresh buffer or the same one), other bytes,
// refused ones, and the remembered one again after a refusal.
func TestMetaMemoMatchesPlainMembers(t *testing.T) {
	metas := []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"}}`,
		`{"progressToken":5,"key":{"x":"y"}}`,
		`{ "progressToken" : "t\"1" , "k" : [1, {"z": "}"}] }`,
		`{}`,
		`{"":1,"a b":"c"}`,
		"{\"caf\xc3\xa9\":1}",
		// The same length, other members (and, below, refused).
		`{"a":1,"bb":22}`,
		`{"aa":11,"b":2}`,
		`{"a":11,"a":22}`,
		// Refused: an escaped name, a name that is not UTF-8, a number no
		// float64 holds, a name written twice.
		`{"progressToken":5,"k\u0065y":{"x":"y"}}`,
		"{\"bad\xff\":1}",
		`{"big":1e999}`,
		`{"a":1,"a":2}`,
	}
	rng := rand.New(rand.NewSource(1))
	var memo metaMemo
	for i := 0; i < 5000; i++ {
		m := metas[rng.Intn(len(metas))]
		// A fresh buffer each time, with bytes before and after the
		// object, as a request's params hold it.
		buf := []byte(fmt.Sprintf(`{"name":"t","_meta":%s,"arguments":{}}`, m))
		v := buf[len(`{"name":"t","_meta":`) : len(buf)-len(`,"arguments":{}}`)]
		want, wantOK := plainMembers(nil, v)
		wantOK = wantOK && numbersFit(v)
		var room [2]member
		got, gotOK := memo.members(room[:0], v)
		if gotOK != wantOK {
			t.Fatalf("step %d, %s: ok %v, want %v", i, m, gotOK, wantOK)
		}
		if !wantOK {
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("step %d, %s: %d members, want %d", i, m, len(got), len(want))
		}
		for j := range want {
			if !bytes.Equal(got[j].name, want[j].name) || !bytes.Equal(got[j].value, want[j].value) || got[j].escaped {
				t.Fatalf("step %d, %s: member %d is %q=%q, want %q=%q", i, m, j, got[j].name, got[j].value, want[j].name, want[j].value)
			}
			// The spans lie in this request's bytes, not the remembered ones.
			if off := cap(v) - cap(got[j].value); off < 0 || off >= len(v) || &v[off] != &got[j].value[0] {
				t.Fatalf("step %d, %s: member %d does not lie in the request's bytes", i, m, j)
			}
		}
	}
}

// parseFastInto with a memo reads params as parseFast does.
func TestParseFastIntoMemoMatchesParseFast(t *testing.T) {
	var memo metaMemo
	for round := 0; round < 3; round++ {
		for _, params := range []string{
			`{"name":"echo","_meta":{"progressToken":5,"key":{"x":"y"}},"arguments":{"a":1}}`,
			`{"name":"echo","_meta":{"progressToken":6,"key":{"x":"y"}},"arguments":{"a":1}}`,
			`{"name":"echo","_meta":{"progressToken":5,"k\u0065y":{"x":"y"}}}`,
			`{"name":"echo","_meta":{"big":1e999}}`,
			`{"name":"echo","arguments":{}}`,
		} {
			want, wantOK := parseFast([]byte(params))
			var room [8]member
			got, gotOK := parseFastInto([]byte(params), room[:0], &memo)
			if gotOK != wantOK || got.name != want.name || !bytes.Equal(got.args, want.args) || len(got.meta) != len(want.meta) {
				t.Fatalf("%s: got %v %+v, want %v %+v", params, gotOK, got, wantOK, want)
			}
			for i := range want.meta {
				if !bytes.Equal(got.meta[i].name, want.meta[i].name) || !bytes.Equal(got.meta[i].value, want.meta[i].value) {
					t.Fatalf("%s: meta %d %q=%q, want %q=%q", params, i, got.meta[i].name, got.meta[i].value, want.meta[i].name, want.meta[i].value)
				}
			}
		}
	}
}

// Reading a plain call's params allocates only the tool name's string:
// the params record stays on the caller's stack, _meta's members go to
// the room given, and a repeated _meta is not walked again.
func TestParseFastIntoAllocations(t *testing.T) {
	params := []byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"fx__echo","arguments":{"text":"bench"}}`)
	var memo metaMemo
	var room [8]member
	n := testing.AllocsPerRun(200, func() {
		if p, ok := parseFastInto(params, room[:0], &memo); !ok || p.name != "fx__echo" || len(p.meta) != 2 {
			t.Fatalf("parseFastInto: %+v %v", p, ok)
		}
	})
	if n > 1 {
		t.Fatalf("%v allocations a read, want at most 1 (the name)", n)
	}
}
