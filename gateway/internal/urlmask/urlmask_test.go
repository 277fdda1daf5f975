package urlmask

import "testing"

// TestHidePath: a key in a url's path (a known prefix, a long run mixing
// letters and digits, a value after /key/) is hidden, the words, versions,
// dates and short ids that say what the url is stay, and the query is
// left to the caller.
func TestHidePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://host.example/v1/sk_live_abc123def456/mcp", "https://host.example/v1/…/mcp"},
		{"https://hooks.example/services/T0A1B2C3D/B0A1B2C3D/aZ3kP9qL2mX7vB4nR8tY1wE5", "https://hooks.example/services/T0A1B2C3D/B0A1B2C3D/…"},
		{"https://api.example/api/0f3a9c2b7d4e8f1a6b5c/sse", "https://api.example/api/…/sse"},
		{"https://api.example/key/opensesame1/sse?x=1#f", "https://api.example/key/…/sse?x=1#f"},
		{"https://api.example/token/ghp_abcdefghijklmnop", "https://api.example/token/…"},
		{"http://[::1]:8080/a/AKIAIOSFODNN7EXAMPLE", "http://[::1]:8080/a/…"},
		{"not a url /x/sk_live_abcdefgh1234", "not a url /x/…"},
		// keys joined by other bytes, escaped, in NAME=VALUE, without digits, after #
		{"https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe", "https://api.telegram.org/…/getMe"},
		{"https://host/v1/dGhpc2lzYXNlY3JldGtleTEyMw==/mcp", "https://host/v1/…/mcp"},
		{"https://host/v1/AbC1dEf2GhI3+jK4lMn5oP6/mcp", "https://host/v1/…/mcp"},
		{"https://host/%73k_live_abcdefghijklmnop/mcp", "https://host/…/mcp"},
		{"https://host/%6Bey/opensesame1/mcp", "https://host/%6Bey/…/mcp"},
		{"https://host/key=abcdefgh12345/mcp", "https://host/…/mcp"},
		{"https://host/mcp;token=swordfishpw", "https://host/…"},
		{"https://hooks.slack.com/services/T00000000/B00000000/vBgAiwlPnxbHPeYrEBBsTlSV", "https://hooks.slack.com/services/T00000000/B00000000/…"},
		{"https://host/mcp#sk_live_abcdefghijklmnop", "https://host/mcp#…"},
		{"https://host#sk_live_abcdefghijklmnop", "https://host#…"},
		{"https://host/mcp?x=1#access_token=abc", "https://host/mcp?x=1#…"},
		// what says what the url is stays
		{"https://mcp.example/api/v2/users/123e4567-e89b-12d3-a456-426614174000", "https://mcp.example/api/v2/users/123e4567-e89b-12d3-a456-426614174000"},
		{"https://mcp.example/GetUserProfileInformation/sse", "https://mcp.example/GetUserProfileInformation/sse"},
		{"https://mcp.example/mcp#tools", "https://mcp.example/mcp#tools"},
		{"https://mcp.example/sort=name/mcp", "https://mcp.example/sort=name/mcp"},
		{"https://mcp.example/a%20b/mcp", "https://mcp.example/a%20b/mcp"},
		{"https://mcp.example/v1/mcp", "https://mcp.example/v1/mcp"},
		{"https://mcp.example/2025-06-18/servers/github-copilot/sse", "https://mcp.example/2025-06-18/servers/github-copilot/sse"},
		{"https://mcp.example/key/list", "https://mcp.example/key/list"},
		{"https://mcp.example/u/12345678901234", "https://mcp.example/u/12345678901234"},
		{"https://mcp.example/ubuntu22", "https://mcp.example/ubuntu22"},
		{"https://mcp.example?sk_live_abcdefgh1234", "https://mcp.example?sk_live_abcdefgh1234"},
		{"https://mcp.example/mcp?key=sk_live_abcdefgh1234", "https://mcp.example/mcp?key=sk_live_abcdefgh1234"},
		{"", ""},
	} {
		if got := HidePath(c.in, "…"); got != c.want {
			t.Errorf("HidePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPlainQueryItem: a bare query item that reads as a flag is kept, any
// other may be a key.
func TestPlainQueryItem(t *testing.T) {
	for p, want := range map[string]bool{"": true, "debug": true, "read-only": true, "read_only": true,
		"sk_live_abc123": false, "abcdefghijklmnopq": false, "-x": false, "a1": false} {
		if got := PlainQueryItem(p); got != want {
			t.Errorf("PlainQueryItem(%q) = %v, want %v", p, got, want)
		}
	}
}
