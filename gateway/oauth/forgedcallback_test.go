package oauth

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// TestForgedCallbackDoesNotEndTheLogin: the loopback redirect listener is
// reachable by any page the user's browser opens (a fixed redirectPort
// makes its address known). A request without this login's state is
// answered and ignored: it neither ends the login nor decides its outcome,
// and the real redirect still completes it.
func TestForgedCallbackDoesNotEndTheLogin(t *testing.T) {
	a := newAuthServer(t)
	az := newAuthorizer(t, a, nil)
	real := browser(t)
	open := func(authURL string) error {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		cb := u.Query().Get("redirect_uri")
		for _, q := range []string{"?state=forged&code=attacker-code", "?state=forged&error=access_denied", "?code=attacker-code"} {
			resp, err := http.Get(cb + q)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("forged callback %s: HTTP %d, want 400", q, resp.StatusCode)
			}
		}
		return real(authURL)
	}
	if err := az.Login(context.Background(), LoginOptions{Open: open}); err != nil {
		t.Fatalf("login after forged callbacks: %v", err)
	}
	if st, _ := az.Status(); !st.Authorized {
		t.Fatalf("status after login: %+v", st)
	}
}
