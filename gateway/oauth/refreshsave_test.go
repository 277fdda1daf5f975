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
// authorization server has already rotated the refresh token away. The
// process goes on with the new tokens (the file's are expired and their
// refresh token dead), the next refresh redeems the new refresh token
// and stores its record, and the log says what was not stored and that
// the stored authorization may no longer refresh once the process ends.
func TestRefreshThatCannotBeStoredSaysTheStoredOneMayBeDead(t *testing.T) {
	a := newAuthServer(t)
	var log syncBuf
	az := newAuthorizer(t, a, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	if err := az.Login(context.Background(), LoginOptions{Open: browser(t)}); err != nil {
		t.Fatal(err)
	}
	// Expired in memory and on disk, as both are in real life.
	az.mu.Lock()
	az.rec.Expiry = time.Now().Add(-time.Minute)
	loginToken := az.rec.AccessToken
	if err := az.st.save(az.rec); err != nil {
		t.Fatal(err)
	}
	az.mu.Unlock()
	a.mu.Lock()
	a.padAccess = maxTokenResponseBytes - 200 // the response fits its cap, the record (with the registration) does not
	a.mu.Unlock()
	h, err := az.Authorization(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimPrefix(h, "Bearer ")
	a.mu.Lock()
	_, issued := a.access[tok]
	a.mu.Unlock()
	if tok == loginToken || !issued {
		t.Fatalf("after a refresh that could not be stored the process sends %.40q..., not the token the refresh got", tok)
	}
	got := log.String()
	if !strings.Contains(got, "token refreshed but not stored") || !strings.Contains(got, "nothing was stored") ||
		!strings.Contains(got, "goes on with the new tokens") || !strings.Contains(got, "may no longer refresh") ||
		!strings.Contains(got, "sluice auth "+az.cfg.Server) {
		t.Fatalf("the log of a refresh that could not be stored:\n%s", got)
	}
	// A 401 for it (say the server restarted) must not bring back the
	// file's expired tokens, and the next refresh redeems the new
	// refresh token and stores what it gets.
	a.mu.Lock()
	a.padAccess = 0
	a.mu.Unlock()
	az.mu.Lock()
	az.rec.Expiry = time.Now().Add(-time.Minute)
	az.mu.Unlock()
	if err := az.Challenge(context.Background(), 401, nil); err != nil {
		t.Fatalf("the 401 after the unsaved refresh: %v\n%s", err, log.String())
	}
	h2, err := az.Authorization(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	_, issued = a.access[strings.TrimPrefix(h2, "Bearer ")]
	refreshes := a.refreshes
	a.mu.Unlock()
	if !issued || h2 == h || refreshes != 2 {
		t.Fatalf("second refresh: sent %.40q... (issued %v), %d refreshes; want a new token from a second refresh\n%s", h2, issued, refreshes, log.String())
	}
	disk, err := az.st.load()
	if err != nil || disk == nil || "Bearer "+disk.AccessToken != h2 {
		t.Fatalf("the token file after the second refresh: %v; want the new tokens stored", err)
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
