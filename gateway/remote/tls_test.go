package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// trusting returns a TLS config whose only root is srv's certificate.
func trusting(srv *httptest.Server) *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

func dialTLS(t *testing.T, url, transport string, cfg *tls.Config) (*Conn, error) {
	t.Helper()
	c, err := Dial(context.Background(), &Options{Server: "t", URL: url, Transport: transport, AllowPrivate: true, TLSConfig: cfg})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// TestHTTPS: both transports over https on loopback, with a certificate
// the client is told to trust: streamable HTTP with a session, JSON and
// SSE answers and the DELETE on close; legacy HTTP+SSE directly and
// through auto's fallback. Without the trust the same server is refused
// with a certificate error, and the request still gets its one answer.
func TestHTTPS(t *testing.T) {
	deleted := make(chan struct{})
	streamable := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Error("a request arrived without TLS")
		}
		switch r.Method {
		case http.MethodDelete:
			if r.Header.Get("Mcp-Session-Id") == "tls-session" {
				close(deleted)
			}
			return
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		m := decode(t, r)
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "tls-session")
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(result(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"tls","version":"1"}}`)))
		case "tools/call":
			if r.Header.Get("Mcp-Session-Id") != "tls-session" {
				t.Errorf("tools/call without the session id")
			}
			sse(w, "event: message\ndata: "+result(m.ID, `{"content":[{"type":"text","text":"over tls"}]}`)+"\n\n")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	var hellos atomic.Int32 // TLS handshakes begun
	streamable.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		hellos.Add(1)
		return nil, nil
	}}
	streamable.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	streamable.StartTLS()
	t.Cleanup(streamable.Close)
	if !strings.HasPrefix(streamable.URL, "https://127.0.0.1:") {
		t.Fatalf("not an https loopback server: %s", streamable.URL)
	}

	c, err := dialTLS(t, streamable.URL, TransportStreamable, trusting(streamable))
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
	if m := recv(t, c); !strings.Contains(m, `"name":"tls"`) {
		t.Fatalf("initialize over https: %s", m)
	}
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	if m := recv(t, c); !strings.Contains(m, "over tls") || !strings.Contains(m, `"id":2`) {
		t.Fatalf("tools/call over https: %s", m)
	}
	c.Close()
	<-deleted // hang guard: the test's own timeout

	var legacy *httptest.Server
	for _, transport := range []string{TransportSSE, TransportAuto} {
		legacy = httptest.NewUnstartedServer(legacySSEHandler(t)) // one stream per server
		legacy.Config.ErrorLog = log.New(io.Discard, "", 0)       // the refused handshake below
		legacy.StartTLS()
		t.Cleanup(legacy.Close)
		c, err := dialTLS(t, legacy.URL+"/sse", transport, trusting(legacy))
		if err != nil {
			t.Fatalf("%s: %v", transport, err)
		}
		send(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
		if m := recv(t, c); !strings.Contains(m, `"method":"initialize"`) {
			t.Fatalf("%s initialize over https: %s", transport, m)
		}
		if c.Transport() != TransportSSE {
			t.Fatalf("%s: transport %q", transport, c.Transport())
		}
		send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if m := recv(t, c); !strings.Contains(m, `"id":2`) {
			t.Fatalf("%s tools/list over https: %s", transport, m)
		}
	}

	// Not trusted: the system roots do not include httptest's
	// certificate. The refusal is final: no retry handshakes.
	u, err := dialTLS(t, streamable.URL, TransportStreamable, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := hellos.Load()
	send(t, u, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`)
	if m := recv(t, u); !strings.Contains(m, `"id":7`) || !strings.Contains(m, "certificate") {
		t.Fatalf("untrusted certificate: %s", m)
	}
	if n := hellos.Load() - before; n != 1 {
		t.Fatalf("%d handshakes for one refused request, want 1 (a certificate refusal is not transient)", n)
	}
	if _, err := dialTLS(t, legacy.URL+"/sse", TransportSSE, nil); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("legacy SSE with an untrusted certificate: err = %v", err)
	}
}
