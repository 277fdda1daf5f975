package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

type urlBackend struct{ fakeBackend }

func (u *urlBackend) Servers(context.Context) ([]Server, []string, error) {
	return []Server{{ID: "hosted", Scope: "user", Trust: "trusted", Run: "idle", Kind: "remote",
		URL: "https://server.example.com/mcp?profile=dev&api_key=query-s3cr3t-0123456789"}}, nil, nil
}

// TestServersHideTheURLQuery: a user declaration's url may carry a key in
// its query (many hosted servers take one there). The dashboard and its
// JSON API show the url with each query value hidden, as they hide
// literal env and header values; the parameter names stay.
func TestServersHideTheURLQuery(t *testing.T) {
	o := Options{Backend: &urlBackend{}}
	h, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/admin/servers", "/admin/api/servers"} {
		w := do(h, "GET", p, loop, nil, nil)
		body := w.Body.String()
		if w.Code != http.StatusOK || !strings.Contains(body, "server.example.com/mcp") || !strings.Contains(body, "api_key=") {
			t.Fatalf("GET %s: %d %s", p, w.Code, body)
		}
		if strings.Contains(body, "query-s3cr3t") || strings.Contains(body, "profile=dev") {
			t.Errorf("GET %s shows the url's query values: %s", p, body)
		}
	}
	for in, want := range map[string]string{
		"https://h/mcp":                                       "https://h/mcp",
		"https://h/mcp?k=v&flag&e=":                           "https://h/mcp?k=••••&flag&e=",
		"https://h/mcp?k=${env:KEY}#frag":                     "https://h/mcp?k=${env:KEY}#frag",
		"https://h/mcp?sk_live_51Habcdef0123&debug&read-only": "https://h/mcp?••••&debug&read-only",
		"https://h/mcp?a1":                                    "https://h/mcp?••••",
		"https://h/mcp?k=a%26b&k2=x#f?k3=y":                   "https://h/mcp?k=••••&k2=••••#••••", // a fragment holding more than a word is hidden too
	} {
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
}

type pathKeyBackend struct{ fakeBackend }

func (u *pathKeyBackend) Servers(context.Context) ([]Server, []string, error) {
	return []Server{{ID: "hosted", Scope: "user", Trust: "trusted", Run: "idle", Kind: "remote",
		URL: "https://server.example.com/v1/sk_live_51Habcdef0123456/mcp"},
		{ID: "hook", Scope: "user", Trust: "trusted", Run: "idle", Kind: "remote",
			URL: "https://hooks.example.com/services/T0A1B2C3D/B0A1B2C3D/aZ3kP9qL2mX7vB4nR8tY1wE5"}}, nil, nil
}

// TestServersHideAKeyInTheURLPath: a key carried in a url's path (hosted
// servers, webhooks) is hidden on the servers page and in its JSON API,
// the rest of the path kept.
func TestServersHideAKeyInTheURLPath(t *testing.T) {
	o := Options{Backend: &pathKeyBackend{}}
	h, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/admin/servers", "/admin/api/servers"} {
		w := do(h, "GET", p, loop, nil, nil)
		body := w.Body.String()
		if w.Code != http.StatusOK || !strings.Contains(body, "server.example.com/v1/") || !strings.Contains(body, "/services/T0A1B2C3D/B0A1B2C3D/") {
			t.Fatalf("GET %s: %d %s", p, w.Code, body)
		}
		for _, k := range []string{"sk_live_51H", "aZ3kP9qL2mX7"} {
			if strings.Contains(body, k) {
				t.Errorf("GET %s shows the key in the url's path: %s", p, body)
			}
		}
	}
}
