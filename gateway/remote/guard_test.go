package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRefused(t *testing.T) {
	cases := []struct {
		addr    string
		refused bool
		rng     string
	}{
		{"127.0.0.1", true, "loopback"},
		{"127.1.2.3", true, "loopback"},
		{"::1", true, "loopback"},
		{"10.1.2.3", true, "private"},
		{"172.16.0.1", true, "private"},
		{"172.31.255.255", true, "private"},
		{"172.32.0.1", false, ""},
		{"192.168.1.1", true, "private"},
		{"169.254.169.254", true, "a cloud metadata address"},
		{"169.254.1.1", true, "link-local"},
		{"100.64.0.1", true, "carrier-grade NAT"},
		{"100.100.100.200", true, "a cloud metadata address"},
		{"100.128.0.1", false, ""},
		{"0.0.0.0", true, "unspecified"},
		{"224.0.0.1", true, "multicast"},
		{"239.255.255.250", true, "multicast"},
		{"240.0.0.1", true, "reserved"},
		{"255.255.255.255", true, "reserved"},
		{"192.0.2.10", true, "reserved"},
		{"198.18.0.1", true, "reserved"},
		{"8.8.8.8", false, ""},
		{"93.184.216.34", false, ""},
		{"::", true, "unspecified"},
		{"fe80::1", true, "link-local"},
		{"fc00::1", true, "private"},
		{"fd00:ec2::254", true, "a cloud metadata address"},
		{"ff02::1", true, "multicast"},
		{"2001:db8::1", true, "reserved"},
		{"::ffff:127.0.0.1", true, "loopback"},
		{"::ffff:8.8.8.8", false, ""},
		{"64:ff9b::a9fe:a9fe", true, "a cloud metadata address (embedded in IPv6)"},
		{"64:ff9b::808:808", false, ""},
		{"2002:0a00:0001::1", true, "private (embedded in IPv6)"},
		{"2002:0808:0808::1", false, ""},
		{"2606:4700:4700::1111", false, ""},
		{"4000::1", true, "reserved"},
		{"fe80::1%eth0", true, "link-local"},
	}
	for _, tc := range cases {
		a := netip.MustParseAddr(tc.addr)
		rng, bad := Refused(a)
		if bad != tc.refused || (tc.refused && !strings.HasPrefix(rng, tc.rng)) {
			t.Errorf("Refused(%s) = %q, %v; want %q, %v", tc.addr, rng, bad, tc.rng, tc.refused)
		}
	}
}

func TestCheckURL(t *testing.T) {
	cases := []struct {
		url  string
		want string // substring of the error; "" = accepted
	}{
		{"https://api.example.com/mcp", ""},
		{"http://127.0.0.1:8931/mcp", ""},
		{"https://[2606:4700::1]:443/mcp?x=1", ""},
		{"ftp://example.com/", "scheme ftp"},
		{"file:///etc/passwd", "scheme file"},
		{"example.com/mcp", "not absolute"},
		{"https://user:secret@example.com/mcp", "userinfo"},
		{"https://:443/mcp", "no host"},
		{"https://example.com/mcp#frag", "fragment"},
		{"https://example.com:99999/mcp", "out of range"},
		{"http://exa mple.com/", "not a URL"},
	}
	for _, tc := range cases {
		_, err := CheckURL(tc.url)
		if tc.want == "" {
			if err != nil {
				t.Errorf("CheckURL(%q) = %v, want nil", tc.url, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckURL(%q) = %v, want an error containing %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL(%q) error leaks the password: %v", tc.url, err)
		}
	}
}

// TestGuardChecksResolvedAddress dials a host *name* that resolves to
// loopback: the refusal must come from the address actually dialled.
func TestGuardChecksResolvedAddress(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/"} {
		c := NewHTTPClient(ClientOptions{})
		_, err := c.Get(u)
		var be *BlockedError
		if !errors.As(err, &be) || be.Range != "loopback" {
			t.Fatalf("GET %s: err = %v, want a BlockedError for loopback", u, err)
		}
		if !dialErr(err) {
			t.Errorf("a guard refusal must count as a dial error (nothing sent)")
		}
	}
	if reached.Load() != 0 {
		t.Fatal("the guard let a request through to loopback")
	}
	// allowPrivate opts out.
	c := NewHTTPClient(ClientOptions{AllowPrivate: true})
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if reached.Load() != 1 {
		t.Fatal("allowPrivate did not reach the server")
	}
}

func TestRedirectPolicy(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a cross-origin redirect was followed")
	}))
	defer other.Close()
	var hops int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		case "/cross":
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		case "/scheme":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			hops++
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/final":
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	c := NewHTTPClient(ClientOptions{AllowPrivate: true})
	resp, err := c.Get(srv.URL + "/same")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("same-origin redirect: %v", err)
	}
	resp.Body.Close()
	for path, want := range map[string]string{"/cross": "cross-origin", "/scheme": "scheme", "/loop": "redirects"} {
		_, err := c.Get(srv.URL + path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GET %s: err = %v, want %q", path, err, want)
		}
	}
	if hops != maxRedirects {
		t.Errorf("followed %d redirects, want %d", hops, maxRedirects)
	}
}

// TestDialRefusedBeforeSending: through a Conn, a refused address becomes
// the request's answer and nothing reaches the server.
func TestDialRefusedBeforeSending(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("request reached the server")
	}))
	defer srv.Close()
	conn, err := Dial(context.Background(), &Options{Server: "s", URL: srv.URL, Transport: TransportStreamable})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	m, err := conn.Receive()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m), "SSRF guard") || !strings.Contains(string(m), `"id":1`) {
		t.Fatalf("response = %s, want a transport error naming the SSRF guard", m)
	}
}
