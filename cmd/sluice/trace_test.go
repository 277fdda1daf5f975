package main

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a loopback OTLP/HTTP traces endpoint.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var msg collector.ExportTraceServiceRequest
	if req.URL.Path != "/v1/traces" || proto.Unmarshal(b, &msg) != nil {
		http.Error(w, "bad export", 400)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// TestServeExportsTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, a served
// tools/call is one server span under the agent's traceparent (from
// _meta), with the gateway's call, admission, filter and upstream call
// spans below it; all arrive at a loopback OTLP receiver by shutdown.
func TestServeExportsTraces(t *testing.T) {
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx"))
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	const agentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	in := rpcLines(initLines,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx__echo","arguments":{"text":"traced"},"_meta":{"traceparent":"00-`+agentTrace+`-00f067aa0ba902b7-01"}}}`,
		// The fixture's meta tool answers with the _meta it received.
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fx__meta","arguments":{},"_meta":{"traceparent":"00-`+agentTrace+`-00f067aa0ba902b8-01"}}}`,
	)
	r := serveSession(t, in, []string{"1", "2", "3"}, "serve", "--mode", "flat")
	if r.code != 0 || !strings.Contains(r.stdout, "traced") {
		t.Fatal(r)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	by := map[string]*tracepb.Span{}
	for _, s := range rcv.spans {
		by[s.Name] = s
	}
	root, call, up := by["tools/call fx__echo"], by["call fx__echo"], by["tools/call echo"]
	var adm *tracepb.Span // one per call: the echo call's
	for _, s := range rcv.spans {
		if s.Name == "admission" && call != nil && string(s.ParentSpanId) == string(call.SpanId) {
			adm = s
		}
	}
	if root == nil || call == nil || adm == nil || up == nil {
		var names []string
		for n := range by {
			names = append(names, n)
		}
		t.Fatalf("spans: %v", names)
	}
	if hex.EncodeToString(root.TraceId) != agentTrace || hex.EncodeToString(root.ParentSpanId) != "00f067aa0ba902b7" || root.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Fatalf("request span: trace %x parent %x kind %v", root.TraceId, root.ParentSpanId, root.Kind)
	}
	parent := func(child, p *tracepb.Span) {
		t.Helper()
		if string(child.ParentSpanId) != string(p.SpanId) || string(child.TraceId) != string(p.TraceId) {
			t.Errorf("%s is not a child of %s", child.Name, p.Name)
		}
	}
	parent(call, root)
	parent(adm, call)
	parent(up, call)
	if up.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("upstream span kind %v", up.Kind)
	}
	attrs := map[string]string{}
	for _, a := range up.Attributes {
		attrs[a.Key] = a.Value.GetStringValue()
	}
	if attrs["mcp.method.name"] != "tools/call" || attrs["gen_ai.tool.name"] != "echo" || attrs["sluice.server"] != "fx" {
		t.Errorf("upstream span attributes: %v", attrs)
	}
	metaCall := by["call fx__meta"]
	for _, s := range rcv.spans {
		if strings.HasPrefix(s.Name, "filter ") && (metaCall == nil || string(s.ParentSpanId) != string(metaCall.SpanId)) {
			parent(s, call)
		}
	}
	// The upstream fixture received a traceparent naming the upstream
	// call's span, in the agent's trace.
	var got string
	for _, line := range strings.Split(r.stdout, "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				StructuredContent struct {
					Meta map[string]any `json:"meta"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == "3" {
			got, _ = m.Result.StructuredContent.Meta["traceparent"].(string)
		}
	}
	upMeta := by["tools/call meta"]
	if upMeta == nil {
		t.Fatal("no upstream span for fx__meta")
	}
	if want := "00-" + agentTrace + "-" + hex.EncodeToString(upMeta.SpanId) + "-01"; got != want {
		t.Fatalf("the upstream received traceparent %q, want %q (the upstream call's span)", got, want)
	}
}
