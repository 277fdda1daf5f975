package oauth

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRefreshLeavesTheQueryOut: the refresh is sluice's own token request
// (x/oauth2 cannot add the resource to it), so it has its own resource
// indicator: the declared url without its query, as for the code exchange
// (RFC 8707 §2). A key in the url's query must not reach the
// authorization server, and the token file keeps its key (with the query).
func TestRefreshLeavesTheQueryOut(t *testing.T) {
	a := newAuthServer(t)
	az := newAuthorizer(t, a, func(c *Config) { c.URL = a.url("/mcp?api_key=query-secret-0123456789") })
	if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	if a.lastResource != a.url("/mcp") {
		t.Fatalf("code exchange resource %q", a.lastResource)
	}
	a.mu.Lock()
	a.lastResource = ""
	a.mu.Unlock()
	az.mu.Lock()
	az.rec.Expiry = time.Now().Add(-time.Minute)
	az.mu.Unlock()
	h, err := az.Authorization(context.Background())
	if err != nil || !strings.HasPrefix(h, "Bearer at-") {
		t.Fatalf("Authorization after expiry: %q, %v", h, err)
	}
	a.mu.Lock()
	refreshes, res := a.refreshes, a.lastResource
	a.mu.Unlock()
	if refreshes != 1 || res != a.url("/mcp") {
		t.Fatalf("refreshes %d (want 1), resource %q (want %q, no query)", refreshes, res, a.url("/mcp"))
	}
	// Another process finds the refreshed token under the same key.
	az2, err := New(az.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := az2.Status(); !st.Authorized || !st.Refreshable {
		t.Fatalf("status from the token file after the refresh: %+v", st)
	}
}
