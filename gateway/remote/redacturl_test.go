package remote

import "testing"

// TestRedactURLHidesBareQueryKeys: a hosted server that takes its key as a
// bare query item (?sk_live_...) gets it hidden like a value; a flag-like
// item (?debug) stays, to tell which url is meant.
func TestRedactURLHidesBareQueryKeys(t *testing.T) {
	for in, want := range map[string]string{
		"https://h/mcp?sk_live_51Habcdef0123":      "https://h/mcp?…",
		"https://h/mcp?debug&key=v&tok3n":          "https://h/mcp?debug&key=…&…",
		"https://u:pw@h/mcp?read-only#frag":        "https://…@h/mcp?read-only#…",
		"https://h/mcp?averyveryverylongflagname1": "https://h/mcp?…",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
