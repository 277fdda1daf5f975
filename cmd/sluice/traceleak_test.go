package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"sluice/gateway/mcp/mcptest"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestServeTracesCarryNoSecrets: with the README's redaction config and
// traces exported, a hostile server's error that carries a key reaches
// the collector in no span: neither in a status message nor in an
// attribute or event. The agent gets the error redacted; the collector
// must not get more than the agent does.
func TestServeTracesCarryNoSecrets(t *testing.T) {
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w := newWorld(t)
	w.writeUser("approve: [\"fx__*\"]\nservers:\n" + fixture(t, "fx", "-mode", "leaky") + readmeFilters)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	got := serveFrames(t, []string{"--mode", "flat"}, []string{
		tool(10, "fx__leak_error", `{}`),
		tool(11, "fx__leak_big_error", `{}`),
	})
	answered := 0
	for _, f := range got {
		if id, _ := f["id"].(float64); id == 10 || id == 11 {
			answered++
		}
	}
	if answered != 2 {
		t.Fatalf("%d of 2 calls answered: %v", answered, got)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	failed := 0
	for _, s := range rcv.spans {
		if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			failed++
		}
		b, _ := proto.Marshal(s)
		if strings.Contains(string(b), mcptest.LeakKey) {
			t.Errorf("span %q carries the key: status %.300q", s.Name, s.Status.GetMessage())
		}
	}
	if failed == 0 {
		t.Fatalf("no span marked failed among %d spans", len(rcv.spans))
	}
}
