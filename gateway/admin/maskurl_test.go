package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

type urlsBackend struct {
	fakeBackend
	servers []Server
}

func (u *urlsBackend) Servers(context.Context) ([]Server, []string, error) {
	return u.servers, nil, nil
}

func remoteServer(id, url string) Server {
	return Server{ID: id, Scope: "user", Trust: "trusted", Run: "idle", Kind: "remote", URL: url}
}

// TestServersHideKeysInTheURL: a user declaration's url may carry a key
// in its query (many hosted servers take one there) or in its path
// (hosted servers, webhooks). The servers page and its JSON API show the
// url with each query value and the path's key hidden, as they hide
// literal env and header values; the parameter names and the rest of the
// path stay.
func TestServersHideKeysInTheURL(t *testing.T) {
	for _, c := range []struct {
		name          string
		servers       []Server
		shown, hidden []string
	}{
		{"query", []Server{remoteServer("hosted", "https://server.example.com/mcp?profile=dev&api_key=query-s3cr3t-0123456789")},
			[]string{"server.example.com/mcp", "api_key="}, []string{"query-s3cr3t", "profile=dev"}},
		{"path", []Server{remoteServer("hosted", "https://server.example.com/v1/sk_live_51Habcdef0123456/mcp"),
			remoteServer("hook", "https://hooks.example.com/services/T0A1B2C3D/B0A1B2C3D/aZ3kP9qL2mX7vB4nR8tY1wE5")},
			[]string{"server.example.com/v1/", "/services/T0A1B2C3D/B0A1B2C3D/"}, []string{"sk_live_51H", "aZ3kP9qL2mX7"}},
	} {
		h, err := New(&Options{Backend: &urlsBackend{servers: c.servers}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/admin/servers", "/admin/api/servers"} {
			w := do(h, "GET", p, loop, nil, nil)
			body := w.Body.String()
			if w.Code != http.StatusOK {
				t.Fatalf("%s: GET %s: %d %s", c.name, p, w.Code, body)
			}
			for _, s := range c.shown {
				if !strings.Contains(body, s) {
					t.Errorf("%s: GET %s does not show %q of the url: %s", c.name, p, s, body)
				}
			}
			for _, k := range c.hidden {
				if strings.Contains(body, k) {
					t.Errorf("%s: GET %s shows %q of the url: %s", c.name, p, k, body)
				}
			}
		}
	}
}

// TestMaskURL: each query value is hidden, a bare item that is not a
// plain flag too, references and plain flags stay.
func TestMaskURL(t *testing.T) {
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
