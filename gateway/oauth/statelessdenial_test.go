package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStatelessDenialIsToldNotObeyed: an authorization server that
// redirects a refusal back without the state (RFC 6749 wants it echoed;
// some leave it out) must not leave `sluice auth` silent until its
// timeout, yet any local program (or a page navigating the browser) can
// send the same request, so it must not end the login either. The
// browser's navigation with an error and the right iss is told at once
// (Notice, quoted) and the login goes on: the real redirect still
// completes it. A page's hidden request of the same shape (an image, a
// fetch), one without the iss the server promised, one with a wrong
// state, and one carrying a code are ignored without a word. A login
// that times out after a stateless refusal names it.
func TestStatelessDenialIsToldNotObeyed(t *testing.T) {
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
	var real func(string) error
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
		if code := get(t, cb+"?error=access_denied&error_description=the+user+said+%1b[2Jno"+iss, nav); code != http.StatusOK {
			t.Errorf("a stateless refusal: HTTP %d, want 200 (told)", code)
		}
		return real(authURL)
	}
	var mu sync.Mutex
	var told []string
	notice := func(m string) { mu.Lock(); told = append(told, m); mu.Unlock() }
	real = browser(t)
	if err := az.Login(context.Background(), LoginOptions{Open: open, Timeout: 10 * time.Minute, Notice: notice}); err != nil {
		t.Fatalf("login after a stateless refusal: %v; a request without state must not end it", err)
	}
	if st, _ := az.Status(); !st.Authorized {
		t.Fatalf("status after the login: %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !strings.Contains(told[0], "access_denied") || !strings.Contains(told[0], `"the user said`) || strings.ContainsRune(told[0], 0x1b) || !strings.Contains(told[0], "keeps waiting") {
		t.Fatalf("notices %q: want one naming the refusal, its text quoted without its control characters", told)
	}
}

// TestTimeoutAfterStatelessRefusalNamesIt: when nothing else comes, the
// timeout's error says what the stateless redirect said.
func TestTimeoutAfterStatelessRefusalNamesIt(t *testing.T) {
	a := newAuthServer(t)
	az := newAuthorizer(t, a, nil)
	issuer := a.url("/as")
	open := func(authURL string) error {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		resp, err := http.Get(u.Query().Get("redirect_uri") + "?error=access_denied&iss=" + url.QueryEscape(issuer))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	err := az.Login(context.Background(), LoginOptions{Open: open, Timeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrCallback) || !strings.Contains(err.Error(), "access_denied") || !strings.Contains(err.Error(), "within") {
		t.Fatalf("login timing out after a stateless refusal: %v; want ErrCallback naming access_denied and the timeout", err)
	}
}
