package oauth

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestChallengeScopesAreBounded: a 403 insufficient_scope's scope is the
// remote server's text, recorded for the next authorization. A server
// that asks for new scopes on every refusal, or for scopes that are not
// scope tokens at all, must not grow the token file (rewritten whole on
// every save) without bound nor put arbitrary text in it.
func TestChallengeScopesAreBounded(t *testing.T) {
	a := newAuthServer(t)
	az := newAuthorizer(t, a, nil)
	ctx := context.Background()
	if err := az.Login(ctx, LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	junk := strings.Repeat("x", 4000)
	for i := 0; i < 300; i++ {
		www := fmt.Sprintf(`Bearer error="insufficient_scope", scope="s%d-%s t%d-%s"`, i, junk, i, junk)
		if i%3 == 0 {
			www = fmt.Sprintf(`Bearer error="insufficient_scope", scope="ok%d u%d"`, i, i)
		}
		if err := az.Challenge(ctx, http.StatusForbidden, []string{www}); err == nil {
			t.Fatalf("challenge %d: a step-up without the user succeeded", i)
		}
	}
	fi, err := os.Stat(az.st.file())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 64<<10 {
		t.Fatalf("the token file grew to %d bytes after refusals asking for ever new scopes", fi.Size())
	}
	r, err := az.st.load()
	if err != nil || r == nil {
		t.Fatal(r, err)
	}
	if len(r.Scopes) > maxRecordedScopes {
		t.Fatalf("%d scopes recorded, over the cap of %d", len(r.Scopes), maxRecordedScopes)
	}
	for _, s := range r.Scopes {
		if len(s) > maxScopeBytes {
			t.Fatalf("a %d-byte scope was recorded", len(s))
		}
	}

	// Not a scope token (RFC 6749 §3.3): a quote, a backslash, a control
	// character. Nothing of it is recorded.
	before := len(r.Scopes)
	for _, bad := range []string{`evil\"quote`, "ctl\x01x", `back\\slash`} {
		az.Challenge(ctx, http.StatusForbidden, []string{`Bearer error="insufficient_scope", scope="` + bad + `"`})
	}
	r, _ = az.st.load()
	for _, s := range r.Scopes {
		if strings.ContainsAny(s, "\"\\\x01") {
			t.Fatalf("scope %q recorded", s)
		}
	}
	if len(r.Scopes) != before {
		t.Fatalf("scopes %d -> %d after invalid scopes", before, len(r.Scopes))
	}
}
