package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// mcpResult builds a CallToolResult with one text item of about n bytes of
// realistic text (JSON-ish lines with escapes and non-ASCII) plus optional
// extras.
func mcpResult(n int, extra string) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "{\"id\": %d, \"name\": \"item-%d\", \"note\": \"naïve café — \\\"quoted\\\"\"}\n", i, i)
	}
	text, _ := json.Marshal(sb.String()[:n])
	return []byte(`{"content":[{"type":"text","text":` + string(text) + `}]` + extra + `}`)
}

type shapedResult struct {
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Resource json.RawMessage `json:"resource"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           *bool           `json:"isError"`
	ResultType        string          `json:"resultType"`
}

func TestShapeBuiltin(t *testing.T) {
	rec := &offloadRecorder{}
	h := newTestHost(t, &Options{Offload: rec.put})
	ctx := context.Background()
	f := mustLoad(t, h, Spec{Builtin: "shape", OnError: FailOpen})
	if f.Mode() != ModeResultJSON || f.Name() != "builtin:shape" {
		t.Fatalf("mode %s name %s", f.Mode(), f.Name())
	}
	small := mcpResult(1000, `,"isError":false`)
	out, err := f.Run(ctx, small, Meta{Stage: "context"})
	if err != nil || out.Status != StatusPass || !bytes.Equal(out.Data, small) || rec.calls != 0 {
		t.Fatalf("within budget: status %v err %v offloads %d", out.Status, err, rec.calls)
	}

	big := []byte(`{"content":[{"type":"text","text":"first item fits"},` +
		string(mcpResult(62*1024, "")[len(`{"content":[`):len(mcpResult(62*1024, ""))-2]) +
		`,{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"` + strings.Repeat("r", 5000) + `"}}` +
		`,{"type":"image","data":"` + strings.Repeat("A", 8000) + `","mimeType":"image/png"}],` +
		`"structuredContent":{"rows":[` + strings.Repeat(`{"a":1},`, 2000) + `{"a":2}]},"isError":true,"resultType":"complete"}`)
	if !json.Valid(big) {
		t.Fatal("bad fixture")
	}
	tests := []struct {
		name   string
		config string
		input  []byte
		budget int
	}{
		{"default budget", "", big, 16384},
		{"custom budget", `{"budgetBytes": 4096}`, big, 4096},
		{"single huge text", `{"budgetBytes": 2048}`, mcpResult(1<<20, ""), 2048},
		{"resource first", `{"budgetBytes": 2048}`, []byte(`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"` + strings.Repeat("é", 5000) + `"}}]}`), 2048},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := mustLoad(t, h, Spec{Builtin: "shape", Config: json.RawMessage(tc.config)})
			rec.calls = 0
			out, err := g.Run(ctx, tc.input, Meta{Stage: "context"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != StatusReplaced {
				t.Fatalf("status %v", out.Status)
			}
			if len(out.Data) > tc.budget || len(out.Data) >= len(tc.input) {
				t.Fatalf("shaped to %d bytes, budget %d, input %d", len(out.Data), tc.budget, len(tc.input))
			}
			var r shapedResult
			if err := json.Unmarshal(out.Data, &r); err != nil {
				t.Fatalf("shaped result is not JSON: %v\n%s", err, out.Data)
			}
			if rec.calls != 1 || !bytes.Equal(rec.last, tc.input) {
				t.Fatalf("offload calls %d, full result stored: %v", rec.calls, bytes.Equal(rec.last, tc.input))
			}
			last, link := r.Content[len(r.Content)-2], r.Content[len(r.Content)-1]
			if last.Type != "text" || !strings.Contains(last.Text, "handle r-00000000") || !strings.Contains(last.Text, "bytes were omitted") {
				t.Fatalf("marker = %q", last.Text)
			}
			if link.Type != "resource_link" || !bytes.Contains(out.Data, []byte(`"uri":"sluice://results/r-00000000`)) {
				t.Fatalf("no resource_link to the stored result: %s", out.Data)
			}
			if bytes.Contains(tc.input, []byte(`"isError":true`)) && (r.IsError == nil || !*r.IsError || r.ResultType != "complete") {
				t.Fatalf("isError/resultType lost: %s", out.Data)
			}
			if len(r.Content) > 1 && !strings.Contains(string(out.Data), "bytes cut]") {
				t.Fatalf("no cut note: %s", out.Data)
			}
		})
	}
	// Without an offload store the marker says so.
	h2 := newTestHost(t, nil)
	g := mustLoad(t, h2, Spec{Builtin: "shape"})
	out, err = g.Run(ctx, big, Meta{})
	if err != nil || !bytes.Contains(out.Data, []byte("could not be stored")) {
		t.Fatalf("no store: %v %s", err, out.Data)
	}
	// A bad config is rejected at load.
	if _, err := h.Load(ctx, Spec{Builtin: "shape", Config: json.RawMessage(`{"budgetBytes": 10}`)}); err == nil || !strings.Contains(err.Error(), "budgetBytes") {
		t.Fatalf("bad budget: %v", err)
	}
	// Not a result: it is stored and shown as a prefix within the budget,
	// never passed on whole.
	bad := bytes.Repeat([]byte("x"), 20000)
	out, err = f.Run(ctx, bad, Meta{})
	if err != nil || out.Status != StatusReplaced || len(out.Data) > 16384 || !bytes.Contains(out.Data, []byte(`"text":"xxxx`)) || !bytes.Contains(out.Data, []byte("handle r-")) {
		t.Fatalf("non-result: %v %d bytes", err, len(out.Data))
	}
}

func TestRedactBuiltin(t *testing.T) {
	h := newTestHost(t, nil)
	ctx := context.Background()
	f := mustLoad(t, h, Spec{Builtin: "redact", Config: json.RawMessage(`{"patterns": ["internal-[0-9]{6}"]}`)})
	if f.OnError() != FailClosed {
		t.Fatal("default policy must be fail-closed")
	}
	secrets := map[string]string{
		"aws-access-key-id":     "AKIAIOSFODNN7EXAMPLE",
		"aws-secret-access-key": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"github-token":          "ghp_" + strings.Repeat("a1B2", 9),
		"github-pat":            "github_pat_" + strings.Repeat("x", 30),
		"gitlab-token":          "glpat-" + strings.Repeat("Z", 20),
		"slack-token":           "xoxb-1234567890-abcdefghij",
		"bearer-token":          "Authorization: Bearer abcdef0123456789.xyz",
		"private-key":           "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
		"pattern-0":             "ticket internal-123456 here",
	}
	leaks := []string{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "a1B2a1B2", "github_pat_xxx", "glpat-ZZ", "xoxb-12", "abcdef0123456789", "MIIEowIBAAKCAQEA", "internal-123456"}
	for name, secret := range secrets {
		t.Run(name, func(t *testing.T) {
			text, _ := json.Marshal("before " + secret + " after")
			in := []byte(`{"content":[{"type":"text","text":` + string(text) + `}],` +
				`"structuredContent":{"nested":{"list":[` + string(text) + `,42]},"n":1.50},"isError":false}`)
			out, err := f.Run(ctx, in, Meta{Stage: "result"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != StatusReplaced {
				t.Fatalf("status %v", out.Status)
			}
			if !json.Valid(out.Data) {
				t.Fatalf("invalid JSON: %s", out.Data)
			}
			for _, l := range leaks {
				if bytes.Contains(out.Data, []byte(l)) {
					t.Fatalf("leaked %q: %s", l, out.Data)
				}
			}
			if c := bytes.Count(out.Data, []byte("[REDACTED:"+name+"]")); c != 2 {
				t.Fatalf("%d masks of %s: %s", c, name, out.Data)
			}
			if !bytes.Contains(out.Data, []byte(`"n":1.50`)) || !bytes.Contains(out.Data, []byte("before ")) {
				t.Fatalf("unrelated content changed: %s", out.Data)
			}
		})
	}
	clean := []byte(`{"content":[{"type":"text","text":"nothing secret"}]}`)
	if out, err := f.Run(ctx, clean, Meta{}); err != nil || out.Status != StatusPass {
		t.Fatalf("clean result: %v %v", out.Status, err)
	}
	if _, err := h.Load(ctx, Spec{Builtin: "redact", Config: json.RawMessage(`{"patterns": ["("]}`)}); err == nil {
		t.Fatal("invalid pattern accepted")
	}
}
