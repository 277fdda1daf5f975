package remote

import (
	"errors"
	"net/url"
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

// TestHideURLErrorHidesTheRepeatedURL: an HTTP client error repeats the
// url it was for; HideURLError shows it as other errors do and keeps the
// cause; another error is returned as is.
func TestHideURLErrorHidesTheRepeatedURL(t *testing.T) {
	const key, q = "sk_live_abcdefgh12345678", "hunter2pwsecret"
	cause := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	err := HideURLError(&url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/" + key + "/mcp?api_key=" + q, Err: cause})
	if got, want := err.Error(), `Post "http://127.0.0.1:1/v1/…/mcp?api_key=…": `+cause.Error(); got != want {
		t.Errorf("HideURLError = %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Error("HideURLError lost the cause")
	}
	if HideURLError(cause) != cause || HideURLError(nil) != nil {
		t.Error("HideURLError changed an error that is not a url.Error")
	}
}
