package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// TestHugeExpiresInIsNotInThePast: an expires_in too large for a
// time.Duration must not wrap around into an expiry in the past, which
// would make every request refresh the token again.
func TestHugeExpiresInIsNotInThePast(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"a","token_type":"Bearer","expires_in":9223372036854775807}`))
	}))
	defer srv.Close()
	az, err := New(Config{Server: "s", URL: srv.URL + "/mcp", StateDir: t.TempDir(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := az.post(context.Background(), srv.URL+"/token", srv.URL, &client{id: "c", method: methodNone}, url.Values{"grant_type": {"refresh_token"}})
	if err != nil {
		t.Fatal(err)
	}
	if !tok.Expiry.After(time.Now().Add(24 * time.Hour)) {
		t.Fatalf("expiry %v for a huge expires_in; want far in the future", tok.Expiry)
	}
}
