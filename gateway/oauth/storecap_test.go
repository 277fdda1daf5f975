package oauth

import (
	"strings"
	"testing"
)

// TestSaveRefusesWhatLoadCannotRead: the token file is read with a cap;
// a record over it (an authorization server's oversized tokens) must not
// replace a readable file with one that load refuses forever after.
func TestSaveRefusesWhatLoadCannotRead(t *testing.T) {
	st := store{dir: t.TempDir(), server: "s", resource: "https://a.example/mcp"}
	if err := st.save(&record{Issuer: "https://as.example", AccessToken: "small"}); err != nil {
		t.Fatal(err)
	}
	err := st.save(&record{Issuer: "https://as.example", AccessToken: strings.Repeat("t", 40<<10), RefreshToken: strings.Repeat("r", 40<<10)})
	if err == nil || !strings.Contains(err.Error(), "nothing was stored") {
		t.Fatalf("saving an oversized record: %v; want a refusal", err)
	}
	r, err := st.load()
	if err != nil || r == nil || r.AccessToken != "small" {
		t.Fatalf("after the refused save: %+v, %v; want the earlier record", r, err)
	}
}
