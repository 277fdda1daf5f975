package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestStatelessDenialEndsTheLogin: an authorization server that redirects
// a refusal back without the state (RFC 6749 wants it echoed; some leave
// it out) must not leave `sluice auth` waiting for its timeout. The
// browser's navigation with an error and the right iss ends the login at
// once with that error. A page's hidden request of the same shape (an
// image, a fetch), one without the iss the server promised, one with a
// wrong state, and one carrying a code are still ignored.
func TestStatelessDenialEndsTheLogin(t *testing.T) {
	a := newAuthServer(t)
	az := newAuthorizer(t, a, nil)
	issuer := a.url("/as")
	get := func(t *testing.T, u string, h map[string]string) int {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	nav := map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-Site": "cross-site"}
	open := func(authURL string) error {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		cb := u.Query().Get("redirect_uri")
		iss := "&iss=" + url.QueryEscape(issuer)
		ignored := []struct {
			q string
			h map[string]string
		}{
			{"?error=access_denied" + iss, map[string]string{"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}},
			{"?error=access_denied" + iss, map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}},
			{"?error=access_denied" + iss, map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}},
			{"?error=access_denied", nav}, // the server promises iss
			{"?error=access_denied&iss=" + url.QueryEscape(issuer+"/other"), nav},
			{"?state=forged&error=access_denied" + iss, nav},
			{"?error=access_denied&code=attacker-code" + iss, nav},
			{"?error=" + url.QueryEscape("bad\"code") + iss, nav},
		}
		for _, f := range ignored {
			if code := get(t, cb+f.q, f.h); code != http.StatusBadRequest {
				t.Errorf("callback %s %v: HTTP %d, want 400 (ignored)", f.q, f.h, code)
			}
		}
		if code := get(t, cb+"?error=access_denied&error_description=the+user+said+no"+iss, nav); code != http.StatusOK {
			t.Errorf("the authorization server's stateless refusal: HTTP %d, want 200", code)
		}
		return nil
	}
	err := az.Login(context.Background(), LoginOptions{Open: open, Timeout: 10 * time.Minute})
	if !errors.Is(err, ErrCallback) || !strings.Contains(err.Error(), "access_denied") || !strings.Contains(err.Error(), "the user said no") {
		t.Fatalf("login after a stateless refusal: %v; want the refusal (ErrCallback, access_denied)", err)
	}
	if st, _ := az.Status(); st.Authorized {
		t.Fatalf("status after a refused login: %+v", st)
	}
}
