package oauth

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// counting wraps browser and counts the authorization pages opened.
func counting(t *testing.T, n *atomic.Int32) func(string) error {
	open := browser(t)
	return func(u string) error {
		n.Add(1)
		return open(u)
	}
}

// TestStepUpInPlace: with Config.Interactive, a 403 insufficient_scope
// re-authorizes inside the refused request with the union of the scopes,
// and the request then succeeds; a scope the authorization server will not
// grant is asked for once, then reported without another login; a server
// never authorized still needs `sluice auth` (no InteractiveFirst).
func TestStepUpInPlace(t *testing.T) {
	a := newAuthServer(t)
	var opened atomic.Int32
	az := newAuthorizer(t, a, func(c *Config) {
		c.Interactive = &LoginOptions{Open: counting(t, &opened), Timeout: time.Minute}
	})
	if m := call(t, a, az); !strings.Contains(m, "sluice auth s") || opened.Load() != 0 {
		t.Fatalf("first use without InteractiveFirst: %s (%d pages opened)", m, opened.Load())
	}
	if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.needScope = "write"
	a.mu.Unlock()
	if m := call(t, a, az); !strings.Contains(m, `"ok":"tools/call"`) {
		t.Fatalf("step-up in place: %s", m)
	}
	a.mu.Lock()
	auths := append([]string(nil), a.authorizations...)
	a.mu.Unlock()
	if opened.Load() != 1 || len(auths) != 2 || !subset([]string{"read", "write"}, strings.Fields(auths[1])) {
		t.Fatalf("%d pages opened, authorization scopes %q; want one more, asking for read and write", opened.Load(), auths)
	}

	// The authorization server grants only read and write: asking for
	// admin is tried once; the same refusal again is reported at once.
	a.mu.Lock()
	a.needScope, a.grantOnly = "admin", []string{"read", "write"}
	a.mu.Unlock()
	if m := call(t, a, az); !strings.Contains(m, "403") && !strings.Contains(m, "scope") {
		t.Fatalf("ungranted scope, first: %s", m)
	}
	if opened.Load() != 2 {
		t.Fatalf("%d pages opened, want 2", opened.Load())
	}
	m := call(t, a, az)
	if !strings.Contains(m, "did not grant it") || opened.Load() != 2 {
		t.Fatalf("ungranted scope, again: %s (%d pages opened)", m, opened.Load())
	}
}

// TestInteractiveBudget: a server that refuses every new token does not
// get more than maxInteractive logins in the window.
func TestInteractiveBudget(t *testing.T) {
	a := newAuthServer(t)
	var opened atomic.Int32
	az := newAuthorizer(t, a, func(c *Config) {
		c.Interactive = &LoginOptions{Open: counting(t, &opened), Timeout: time.Minute}
		c.InteractiveFirst = true
	})
	// Every token is forgotten right after it is issued.
	a.mu.Lock()
	a.grantOnly = []string{}
	a.mu.Unlock()
	var last string
	for i := 0; i < maxInteractive+2; i++ {
		a.mu.Lock()
		a.access = map[string][]string{}
		a.refresh = map[string]bool{}
		a.mu.Unlock()
		last = call(t, a, az)
	}
	if opened.Load() > maxInteractive {
		t.Fatalf("%d logins, want at most %d", opened.Load(), maxInteractive)
	}
	if !strings.Contains(last, "already asked for authorization") {
		t.Fatalf("last refusal: %s", last)
	}
}

// TestAuthorizationServerMigration: when the protected resource metadata
// names a new authorization server, the stored tokens are not refreshed at
// the old one and its client registration is not presented to the new
// one: the client registers again there (in place with Interactive).
func TestAuthorizationServerMigration(t *testing.T) {
	for _, interactive := range []bool{false, true} {
		a := newAuthServer(t)
		var opened atomic.Int32
		az := newAuthorizer(t, a, func(c *Config) {
			if interactive {
				c.Interactive = &LoginOptions{Open: counting(t, &opened), Timeout: time.Minute}
			}
		})
		if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
			t.Fatal(err)
		}
		if m := call(t, a, az); !strings.Contains(m, `"ok":"tools/call"`) {
			t.Fatalf("before the move: %s", m)
		}
		a.mu.Lock()
		a.current = "/as2"
		refreshes := a.refreshes
		a.mu.Unlock()
		m := call(t, a, az)
		a.mu.Lock()
		if a.refreshes != refreshes {
			t.Errorf("interactive=%v: the old authorization server's refresh token was used", interactive)
		}
		a.mu.Unlock()
		if !interactive {
			if !strings.Contains(m, a.url("/as2")) || !strings.Contains(m, "sluice auth s") {
				t.Fatalf("after the move: %s", m)
			}
			if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
				t.Fatal(err) // the old client id would be refused at /as2
			}
			m = call(t, a, az)
		}
		if !strings.Contains(m, `"ok":"tools/call"`) {
			t.Fatalf("interactive=%v, after re-authorizing: %s", interactive, m)
		}
		a.mu.Lock()
		registered := a.registered
		a.mu.Unlock()
		if registered != 2 {
			t.Errorf("interactive=%v: %d registrations, want 2 (one per authorization server)", interactive, registered)
		}
		if st, _ := az.Status(); st.Issuer != a.url("/as2") {
			t.Errorf("interactive=%v: status issuer %q", interactive, st.Issuer)
		}
	}
}
