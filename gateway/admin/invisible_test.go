package admin

import (
	"context"
	"strings"
	"testing"
	"time"
)

// hostileBackend serves a project declaration, a run error and a stderr
// tail carrying characters that make a line read differently from what it
// is (a bidi override, a zero-width space, a terminal escape).
type hostileBackend struct{ *fakeBackend }

const trojan = "safe\u202e\u200bhidden\x1b[8m"

func (h hostileBackend) Servers(context.Context) ([]Server, []string, error) {
	return []Server{{ID: "fx", Scope: "project", Trust: "untrusted", Run: "failed", Kind: "stdio",
		Command: "tool" + trojan, Args: []string{"--x", "a" + trojan}, Env: map[string]string{"K": "v" + trojan},
		Reason: "r" + trojan, RunError: "e" + trojan, StderrTail: "tail" + trojan}}, nil, nil
}

func (h hostileBackend) TrustPrompt(context.Context, string) (*TrustOffer, error) {
	return &TrustOffer{Text: "Trusting fx\n  command: tool" + trojan + "\n", Digest: h.digest}, nil
}

// TestPagesShowInvisibleCharacters: html/template escapes markup, not the
// characters that reorder or hide text. Where a person decides (an
// approval: the call's arguments and a script; the trust of a project
// declaration; the servers page next to its trust button), and where a
// server's own text appears (its stderr, its run error), they are shown as
// escapes, as the review page already does: an approved script must read
// as what runs.
func TestPagesShowInvisibleCharacters(t *testing.T) {
	q, err := NewApprovals(ApprovalOptions{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{digest: "d"}
	h, err := New(&Options{Backend: hostileBackend{fb}, Approvals: q})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Ask(ctx, ApprovalRequest{Kind: "script", Capabilities: []string{"fx__w"}, Arguments: `{"cmd":"ls ` + trojan + `"}`,
		Script: "await fx.w({cmd: 'ls'}) // " + trojan, Reason: "needs approval" + trojan})
	for len(q.Pending()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	for _, path := range []string{"/admin/activity", "/admin/servers", "/admin/servers/fx/trust"} {
		w := do(h, "GET", path, loop, nil, nil)
		page := w.Body.String()
		if w.Code != 200 {
			t.Fatalf("%s: HTTP %d", path, w.Code)
		}
		if strings.ContainsAny(page, "\u202e\u200b\x1b") {
			i := strings.IndexAny(page, "\u202e\u200b\x1b")
			t.Errorf("%s shows an invisible character raw near %q", path, page[max(0, i-60):min(len(page), i+20)])
		}
		if !strings.Contains(page, `\u202e`) {
			t.Errorf("%s does not show the bidi override as an escape", path)
		}
	}
}
