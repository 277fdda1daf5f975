package gateway

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// TestScriptApprovalByElicitation: a script whose pre-flight names
// capabilities that need approval asks the agent's user once for the whole
// set (module calls and parallel() alike), bound to the script's digest;
// declined, nothing runs; an agent that cannot be asked (and no dashboard)
// is refused up front with the remedy.
func TestScriptApprovalByElicitation(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	stderr := &syncBuffer{}
	g := w.open(func(o *Options) { o.ServerStderr = stderr })
	var (
		mu     sync.Mutex
		asked  []string
		answer = "accept"
	)
	a := serveAgent(t, g, false, `{"elicitation":{}}`, func(method string, params json.RawMessage) (json.RawMessage, *rpcError) {
		if method != "elicitation/create" {
			return nil, &rpcError{Code: -32601, Message: "no"}
		}
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, string(params))
		return json.RawMessage(`{"action":"` + answer + `","content":{}}`), nil
	})
	script := `fx.stderr(text="run-one")
r = parallel([{"tool": "fx__stderr", "args": {"text": "run-two"}}, {"tool": "fx__echo", "args": {"text": "e"}}])
result = [x.ok for x in r]
`
	args, _ := json.Marshal(map[string]string{"script": script})
	r := a.tool("execute", string(args))
	if r.IsError || !strings.Contains(r.text(), "true") {
		t.Fatalf("approved script: %s", r.raw)
	}
	mu.Lock()
	if len(asked) != 1 {
		t.Fatalf("asked %d times, want once for the whole set: %v", len(asked), asked)
	}
	if msg := asked[0]; !strings.Contains(msg, "fx__stderr") || !strings.Contains(msg, scriptDigest(script)[:16]) || strings.Contains(msg, "fx__echo") {
		t.Errorf("the question does not name exactly the set and the script's digest: %s", msg)
	}
	answer = "decline"
	mu.Unlock()
	if s := stderr.String(); !strings.Contains(s, "run-one") || !strings.Contains(s, "run-two") {
		t.Fatalf("the approved script's calls did not run:\n%s", s)
	}

	declined := strings.ReplaceAll(script, "run-", "declined-")
	args, _ = json.Marshal(map[string]string{"script": declined})
	r = a.tool("execute", string(args))
	if !r.IsError || !strings.Contains(r.text(), "declined") {
		t.Fatalf("declined script: %s", r.raw)
	}
	a.close()
	if strings.Contains(stderr.String(), "declined-") {
		t.Fatal("a declined script's call ran")
	}

	g2 := w.open(func(o *Options) { o.ServerStderr = stderr })
	b := serveAgent(t, g2, false, `{}`, nil)
	r = b.tool("execute", string(args))
	if !r.IsError || !strings.Contains(r.text(), "no dashboard") || !strings.Contains(r.text(), "approve") {
		t.Fatalf("a script that cannot be approved: %s", r.raw)
	}
	b.close()
	if strings.Contains(stderr.String(), "declined-") {
		t.Fatal("an unapproved script's call ran")
	}
	waitNoChildren(t)
}
