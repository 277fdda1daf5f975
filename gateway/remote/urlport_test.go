package remote

import (
	"strings"
	"testing"
)

// TestURLErrorsHideAKeyInThePortPlace: a key typed after the host with :
// instead of / is no port; the refusal names the problem without
// printing it, in the url or in the parse error's reason. A real port,
// an IPv6 host and a short bad escape stay readable.
func TestURLErrorsHideAKeyInThePortPlace(t *testing.T) {
	const key = "sk_live_abcdefgh12345678"
	for raw, want := range map[string]string{
		"https://mcp.example.com:" + key + "/mcp":       `URL "https://mcp.example.com:…/mcp" refused: not a URL: invalid port "…" after host`,
		"https://me:pw@mcp.example.com:" + key + "/mcp": `URL "https://…@mcp.example.com:…/mcp" refused: not a URL: invalid port "…" after host`,
		"https://mcp.example.com:" + key:                `URL "https://mcp.example.com:…" refused: not a URL: invalid port "…" after host`,
		"https://mcp.example.com:99999/mcp":             `port 99999 is out of range`,
		"https://[::1]:8080/%zz":                        `URL "https://[::1]:8080/%zz" refused: not a URL: invalid URL escape "%zz"`,
	} {
		_, err := CheckURL(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURL(%q) = %v, want it to hold %s", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("CheckURL(%q) prints the key: %v", raw, err)
		}
	}
}
