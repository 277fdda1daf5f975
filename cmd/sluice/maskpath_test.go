package main

import (
	"strings"
	"testing"
)

// TestRemoteURLPathKeyStaysOutOfCheckAndServers: a key carried in a
// remote server's url path (a hosted server's /v1/<key>/mcp, a webhook's
// last segment) is hidden by check's errors and by the listings, as the
// dashboard hides it; the rest of the url stays, to tell the server by.
func TestRemoteURLPathKeyStaysOutOfCheckAndServers(t *testing.T) {
	w := newWorld(t)
	w.writeUser(`servers:
  hosted:
    url: "https://mcp.example/v1/sk_live_51Habcdef0123456/mcp"
  hook:
    url: "https://hooks.example/services/T0A1B2C3D/B0A1B2C3D/aZ3kP9qL2mX7vB4nR8tY1wE5"
  badscheme:
    url: "ftp://mcp.example/api/0f3a9c2b7d4e8f1a6b5c/sse"
`)
	keys := []string{"sk_live_51H", "aZ3kP9qL2mX7", "0f3a9c2b7d4e"}
	for _, args := range [][]string{{"check"}, {"servers"}, {"servers", "--json"}} {
		r := sluiceProc(t, "", args...)
		for _, k := range keys {
			if strings.Contains(r.stdout+r.stderr, k) {
				t.Errorf("sluice %v shows the key %q of a url's path:\n%s", args, k, r)
			}
		}
		want(t, r, exitFailure, `ftp://mcp.example/api/…/sse`)
		if len(args) == 2 {
			want(t, r, exitFailure, "https://mcp.example/v1/(hidden)/mcp", "https://hooks.example/services/T0A1B2C3D/B0A1B2C3D/(hidden)")
		}
	}
}
