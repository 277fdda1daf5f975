package trace

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is a loopback OTLP/HTTP traces endpoint.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	b, _ := io.ReadAll(req.Body)
	var msg collector.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Write(out)
}

func TestSpansReachAnOTLPReceiver(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}
	tr, err := Open(&Options{Getenv: func(k string) string { return env[k] }, Synchronous: true})
	if err != nil || tr == nil {
		t.Fatal(tr, err)
	}
	// The agent's traceparent is the remote parent of the request span.
	const agentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := Extract(context.Background(), "00-"+agentTrace+"-00f067aa0ba902b7-01", "")
	ctx, root := tr.Start(ctx, "tools/call fx__echo", KindServer, Attr{"mcp.method.name", "tools/call"}, Attr{"gen_ai.tool.name", "echo"})
	cctx, up := tr.Start(ctx, "tools/call echo", KindClient)
	tp, _ := Inject(cctx)
	if !strings.HasPrefix(tp, "00-"+agentTrace+"-") {
		t.Fatalf("upstream traceparent %q is not in the agent's trace", tp)
	}
	up.End(errors.New("boom"))
	root.End(nil)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) != 2 {
		t.Fatalf("want 2 spans, got %d", len(rcv.spans))
	}
	by := map[string]*tracepb.Span{}
	for _, s := range rcv.spans {
		by[s.Name] = s
	}
	r, c := by["tools/call fx__echo"], by["tools/call echo"]
	if r == nil || c == nil {
		t.Fatalf("spans: %v", rcv.spans)
	}
	if string(c.ParentSpanId) != string(r.SpanId) || string(r.TraceId) != string(c.TraceId) {
		t.Fatal("the upstream span is not the request span's child")
	}
	if got := hex(r.ParentSpanId); got != "00f067aa0ba902b7" || hex(r.TraceId) != agentTrace {
		t.Fatalf("request span parent %s trace %s", got, hex(r.TraceId))
	}
	if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || r.Kind != tracepb.Span_SPAN_KIND_SERVER || c.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Fatalf("status/kinds: %v %v %v", c.Status, r.Kind, c.Kind)
	}
	// The failure is recorded by kind only: an error's text may be an
	// upstream server's message carrying a secret.
	if msg := c.Status.GetMessage(); strings.Contains(msg, "boom") || msg != "*errors.errorString" {
		t.Fatalf("the failed span's status message is %q, want the error's type and not its text", msg)
	}
	if !strings.Contains(tp, "-"+hex(c.SpanId)+"-") {
		t.Fatalf("the traceparent sent upstream %q does not name the upstream span %s", tp, hex(c.SpanId))
	}
}

func hex(b []byte) string {
	const d = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, d[c>>4], d[c&15])
	}
	return string(out)
}

func TestOffCostsNothing(t *testing.T) {
	tr, err := Open(&Options{Getenv: func(string) string { return "" }})
	if tr != nil || err != nil {
		t.Fatal(tr, err)
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, s := tr.Start(ctx, "x", KindServer, Attr{"k", "v"})
		s.Set(Attr{"a", 1})
		s.End(nil)
		_ = c
	})
	if allocs != 0 {
		t.Fatalf("tracing off allocates %v per span", allocs)
	}
	if tp, _ := Inject(ctx); tp != "" {
		t.Fatalf("no span, yet traceparent %q", tp)
	}
}

func BenchmarkSpanOff(b *testing.B) {
	var tr *Tracer
	ctx := context.Background()
	for b.Loop() {
		c, s := tr.Start(ctx, "tools/call", KindServer)
		s.End(nil)
		_ = c
	}
}

// TestSpanTextIsBounded: a span's name and string attributes carry what
// an agent sent (the capability of a call, before it is validated); a
// span holds them until the batch is exported, so each is bounded, cut
// at a character boundary.
func TestSpanTextIsBounded(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}
	tr, err := Open(&Options{Getenv: func(k string) string { return env[k] }, Synchronous: true})
	if err != nil || tr == nil {
		t.Fatal(tr, err)
	}
	huge := "é" + strings.Repeat("x", 1<<20)
	_, sp := tr.Start(context.Background(), "tools/call "+huge, KindServer, Attr{"gen_ai.tool.name", huge})
	sp.Set(Attr{"sluice.other", huge}, Attr{"sluice.n", 3})
	sp.End(nil)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) != 1 {
		t.Fatalf("want 1 span, got %d", len(rcv.spans))
	}
	s := rcv.spans[0]
	if len(s.Name) > MaxText || !strings.HasPrefix(s.Name, "tools/call é") || !utf8.ValidString(s.Name) {
		t.Fatalf("span name is %d bytes (cap %d), valid UTF-8 %v", len(s.Name), MaxText, utf8.ValidString(s.Name))
	}
	for _, a := range s.Attributes {
		if v := a.GetValue().GetStringValue(); len(v) > MaxText || !utf8.ValidString(v) {
			t.Fatalf("attribute %s is %d bytes (cap %d)", a.Key, len(v), MaxText)
		}
	}
	if len(s.Attributes) != 3 {
		t.Fatalf("attributes: %v", s.Attributes)
	}
}
