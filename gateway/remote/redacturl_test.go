package remote

import (
	"net/url"
	"testing"
)

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

// TestURLsOfMessagesHidePathKeys: the url of an error message or a log
// line hides a key carried in the path, as the listings do.
func TestURLsOfMessagesHidePathKeys(t *testing.T) {
	in := "https://u:pw@h.example/v1/sk_live_51Habcdef0123456/mcp?key=k1#f"
	if got, want := redactURL(in), "https://…@h.example/v1/…/mcp?key=…#…"; got != want {
		t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
	}
	u, err := url.Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Describe(u), "https://h.example/v1/…/mcp"; got != want {
		t.Errorf("Describe(%q) = %q, want %q", in, got, want)
	}
}
