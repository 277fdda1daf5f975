package sandbox

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// decodeShapes are JSON texts of 300,000 small values each, of the
// shapes that take the most per input byte.
func decodeShapes() map[string]string {
	const n = 300000
	arr := func(v string) string { return "[" + strings.Repeat(v+",", n) + "1]" }
	var keys strings.Builder
	keys.WriteString("{")
	for i := 0; i < n; i++ {
		if i > 0 {
			keys.WriteString(",")
		}
		fmt.Fprintf(&keys, "\"%d\":1", i)
	}
	keys.WriteString("}")
	return map[string]string{
		"empty objects": arr("{}"), "empty arrays": arr("[]"), "small ints": arr("1"), "large ints": arr("123456789012345678901234"),
		"floats": arr("1.5"), "inexact floats": arr("1e400"), "empty strings": arr(`""`), "strings": arr(`"abcdefgh"`),
		"escaped strings": arr(`"\n\u00e9"`), "one-key objects": arr(`{"a":1}`), "nested arrays": arr("[[1]]"), "true": arr("true"),
		"many keys": keys.String(),
	}
}

// TestDecodeCostCovers: the cost the parser counts is at least what the
// runtime counts it allocating (garbage included), for each shape.
func TestDecodeCostCovers(t *testing.T) {
	for name, s := range decodeShapes() {
		data := []byte(s)
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		before := m.TotalAlloc
		v, cost, err := decodeJSON(data, 0)
		runtime.ReadMemStats(&m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runtime.KeepAlive(v)
		a := int64(m.TotalAlloc - before)
		t.Logf("%-16s %8d bytes of JSON: allocated %s, counted %s", name, len(data), fmtBytes(a), fmtBytes(cost))
		if a > cost {
			t.Errorf("%s: allocated %s, more than the %s counted", name, fmtBytes(a), fmtBytes(cost))
		}
	}
}

// TestDecodeWithinTheCap: json.decode of each shape, about 20 MB of JSON
// with the decoded values taking up to 200 MB, under a 48 MiB cap, is
// refused naming the limit without allocating past the cap, or allocates
// within it. Before, only four times the text was charged and the parse
// could not be stopped: 9 MB of "{}," made 1.7 GiB of dicts.
func TestDecodeWithinTheCap(t *testing.T) {
	const limit = 48 << 20
	for _, c := range []struct{ name, value string }{
		{"empty objects", "{}"}, {"small ints", "1"}, {"empty arrays", "[]"}, {"inexact floats", "1e400"}, {"one-key objects", `{"a":1}`},
	} {
		setup := fmt.Sprintf("s = \"[\" + %q * 300000 + \"1]\"\n", c.value+",")
		base, r := allocatedBy(setup+"result = len(s)", limit)
		if r.Error != nil {
			t.Fatalf("%s: setup: %v", c.name, r.Error)
		}
		a, r := allocatedBy(setup+"r = json.decode(s)\nresult = len(r)", limit)
		n := int64(a) - int64(base)
		switch {
		case r.Error != nil && r.Error.Limit == LimitMemory:
			if !strings.Contains(r.Error.Message, "maxMemoryBytes") {
				t.Errorf("%s: refusal does not name the limit: %s", c.name, r.Error.Message)
			}
			t.Logf("%s: refused: %s (allocated %s)", c.name, r.Error.Message, fmtBytes(n))
		case r.Error != nil:
			t.Fatalf("%s: %v", c.name, r.Error)
		default:
			t.Logf("%s: allowed, allocated %s", c.name, fmtBytes(n))
		}
		if n > limit {
			t.Errorf("%s: allocated %s, over the %s cap", c.name, fmtBytes(n), fmtBytes(limit))
		}
	}
}

// TestToolResultDecodeWithinTheCap: a tool result of small objects (an
// echo of 300,000 references to one empty dict: 0.9 MB of JSON, 170 MB
// of dicts once decoded) under a 48 MiB cap is refused naming the limit
// without allocating past the cap. Before, it was charged four times its
// text and decoded whole.
func TestToolResultDecodeWithinTheCap(t *testing.T) {
	const limit = 48 << 20
	setup := "x = [{}] * 300000\n"
	base, r := allocatedBy(setup+"result = len(x)", limit)
	if r.Error != nil {
		t.Fatalf("setup: %v", r.Error)
	}
	a, r := allocatedBy(setup+"r = db.echo(x=x)\nresult = len(r)", limit)
	n := int64(a) - int64(base)
	if r.Error == nil || r.Error.Limit != LimitMemory || !strings.Contains(r.Error.Message, "maxMemoryBytes") {
		t.Fatalf("%v (result %s); want the memory limit named", r.Error, r.Result)
	}
	t.Logf("refused: %s (allocated %s)", r.Error.Message, fmtBytes(n))
	if n > limit {
		t.Errorf("allocated %s, over the %s cap", fmtBytes(n), fmtBytes(limit))
	}
}
