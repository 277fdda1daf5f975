package front

import (
	"encoding/json"
	"strings"
	"testing"
)

// numbersFit agrees with encoding/json decoding into an any.
func TestNumbersFit(t *testing.T) {
	for _, v := range []string{
		`{}`, `1`, `-0`, `1e308`, `1e309`, `-1e400`, `1e-400`, `0e99999`, `1.5E+3`, `"1e999"`, `"\"1e999"`,
		`{"a":[1,2,{"b":1e999}]}`, `{"a":"x\\","b":1e999}`, `{"k\"1e999":2}`, `[` + strings.Repeat("9", 308) + `]`,
		`[` + strings.Repeat("9", 309) + `]`, `[-` + strings.Repeat("9", 400) + `]`, `123456789012345678901234567890e300`,
		`{"a":true,"b":null,"c":[-2.5e-10]}`,
	} {
		var x any
		want := json.Unmarshal([]byte(v), &x) == nil
		if got := numbersFit([]byte(v)); got != want {
			t.Errorf("numbersFit(%.60s) = %v, encoding/json decodes it: %v", v, got, want)
		}
	}
}

func FuzzNumbersFit(f *testing.F) {
	for _, s := range []string{`{"a":1e999}`, `[1,"2",-3.5e-2]`, `"\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		var x any
		want := json.Unmarshal([]byte(s), &x) == nil
		if got := numbersFit([]byte(s)); got != want {
			t.Fatalf("numbersFit(%q) = %v, encoding/json: %v", s, got, want)
		}
	})
}
