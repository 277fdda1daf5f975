package oauth

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRefreshThatCannotBeStoredSaysTheStoredOneMayBeDead: a refresh whose
// tokens are too large for the token file is not stored, but the
// authorization server has already rotated the refresh token away, so
// the error says the stored authorization may no longer refresh and how
// to get a new one, not just that nothing was stored.
func TestRefreshThatCannotBeStoredSaysTheStoredOneMayBeDead(t *testing.T) {
	a := newAuthServer(t)
	var log syncBuf
	az := newAuthorizer(t, a, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.padAccess = maxTokenResponseBytes - 200 // the response fits its cap, the record (with the registration) does not
	a.mu.Unlock()
	az.mu.Lock()
	az.rec.Expiry = time.Now().Add(-time.Minute)
	az.mu.Unlock()
	if _, err := az.Authorization(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := log.String()
	if !strings.Contains(got, "token refresh failed") || !strings.Contains(got, "nothing was stored") ||
		!strings.Contains(got, "may no longer refresh") || !strings.Contains(got, "sluice auth "+az.cfg.Server) {
		t.Fatalf("the log of a refresh that could not be stored:\n%s", got)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
