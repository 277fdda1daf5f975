package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sluice/gateway/mcp/mcptest"
)

// postCall posts one tools/call of the gateway's call tool on an
// initialised HTTP session and returns the call tool's result text and
// isError. Safe for concurrent use (it never calls t.Fatal).
func postCall(c *mcpHTTP, id int, capability, args string) (text string, isError bool, err error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call","arguments":{"capability":%q,"arguments":%s}}}`, id, capability, args)
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", c.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var frame struct {
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("data:")))
		if json.Unmarshal(line, &frame) == nil && frame.Result != nil {
			var texts []string
			for _, c := range frame.Result.Content {
				texts = append(texts, c.Text)
			}
			return strings.Join(texts, "\n"), frame.Result.IsError, nil
		}
	}
	return "", false, fmt.Errorf("call %s: no result in %d %.300s", capability, resp.StatusCode, b)
}

// TestServeFilterOverrunIsolated hammers one server with results the
// fail-closed redactor cannot finish within its deadline, all at once,
// while another server's calls go on: the other server's results keep
// being redacted, the hammered server's are withheld (ran past the
// deadline, or refused while its overrunning calls finish), refusals do
// not count as failures and overlapping timeouts count once (the filter is
// not disabled, though the burst is longer than the five failures that
// disable it), the refusal says so in the agent's answer, and the hammered
// server is filtered again once its calls have ended.
//
// How long an abandoned call runs on is the machine's business, so the
// test holds each one open once it has returned (the binary's sluicetest
// hook, SLUICE_TESTHOOK_HOLD_OVERRUN) until it has seen what happens
// meanwhile: every call of the burst overlaps the first one's overrun by
// construction, however the machine spreads them out.
func TestServeFilterOverrunIsolated(t *testing.T) {
	w := newWorld(t)
	const burst = 6
	// Server a answers the burst's calls together (-together), so that
	// several of them are likely to reach the redactor before the first
	// one's deadline and time out together; the hold makes the outcome the
	// same when they do not.
	w.writeUser("approve: [\"a__*\", \"b__*\"]\nservers:\n" + fixture(t, "a", "-mode", "leaky", "-together", strconv.Itoa(burst)) + fixture(t, "b") +
		"filters:\n  - module: builtin:redact\n    stage: result\n    onError: fail-closed\n" +
		// A fixed deadline: 250 ms for any result, a hundred times what
		// a small one takes even on a loaded machine, and about a quarter
		// of what the 3 MiB of leak_dense_text take (about 0.3 s per MiB
		// on an idle machine; more on a loaded one).
		"    timeoutMs: 250\n    timeoutPerMiBMs: 1\n")
	release := filepath.Join(t.TempDir(), "release")
	ended := false
	endOverruns := func() {
		if !ended {
			ended = true
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Error(err)
			}
		}
	}
	// Two threads, so that two calls of the burst can run at once and
	// time out together (each thread's pool slot takes one): at one, the
	// redactor's native code holds the only thread until its next host
	// call and a single call of the burst times out.
	addr, _, stop := startHTTPServeProc(t, []string{"SLUICE_TESTHOOK_HOLD_OVERRUN=" + release}, "--procs", "2")
	defer stop()
	defer endOverruns() // before stop: serve's close waits for the held calls
	c := &mcpHTTP{t: t, url: "http://" + addr + "/mcp"}
	c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	small := fmt.Sprintf(`{"text":"key %s"}`, mcptest.LeakKey)
	// Warm up: the filter is compiled on its first result.
	text, isErr, err := postCall(c, 2, "b__echo", small)
	if err != nil || isErr || !strings.Contains(text, "[REDACTED:") {
		t.Fatalf("first call through the redactor: %q %v %v", text, isErr, err)
	}

	type answer struct {
		text  string
		isErr bool
		err   error
	}
	aAnswers := make(chan answer, burst+1)
	var wg sync.WaitGroup
	for i := 0; i < burst; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			text, isErr, err := postCall(c, 100+i, "a__leak_dense_text", "{}")
			aAnswers <- answer{text, isErr, err}
		}(i)
	}
	// Server b meanwhile, and once more while the burst's overrun is held.
	var bAnswers []answer
	bCalls := func(id int) {
		for i := 0; i < 10; i++ {
			text, isErr, err := postCall(c, id+i, "b__echo", small)
			bAnswers = append(bAnswers, answer{text, isErr, err})
		}
	}
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		bCalls(200)
	}()
	wg.Wait()
	<-bDone
	// The burst's first call to reach the redactor ran past its deadline
	// (nothing overran before it) and is held running on: server a is
	// refused now, server b is not.
	bCalls(400)
	text, isErr, err = postCall(c, 300, "a__echo", small)
	aAnswers <- answer{text, isErr, err}
	close(aAnswers)

	for i, a := range bAnswers {
		if a.err != nil || a.isErr || !strings.Contains(a.text, "key [REDACTED:aws-access-key-id]") || strings.Contains(a.text, mcptest.LeakKey) {
			t.Errorf("server b's call %d while server a overran: %q isError=%v err=%v; want it redacted", i, a.text, a.isErr, a.err)
		}
	}
	timeouts, refused := 0, 0
	for a := range aAnswers {
		switch {
		case a.err != nil:
			t.Errorf("server a's call: %v", a.err)
		case strings.Contains(a.text, mcptest.LeakKey[:8]):
			t.Errorf("server a's call leaked the key: %.200q", a.text)
		case !a.isErr || !strings.Contains(a.text, "the result was withheld (the filter is fail-closed)"):
			t.Errorf("server a's call: %.300q isError=%v; want it withheld", a.text, a.isErr)
		case strings.Contains(a.text, "ran past its 253ms deadline; its result is dropped"):
			timeouts++
		case strings.Contains(a.text, "did not run: an earlier call on this server's results ran past its deadline"):
			refused++
		default:
			t.Errorf("server a's call: %.300q; want a deadline or a refusal named", a.text)
		}
	}
	if timeouts == 0 {
		t.Errorf("no call of the burst ran past the deadline: the test's results are not big enough to overrun")
	}
	if !strings.Contains(text, "did not run: an earlier call on this server's results") {
		t.Errorf("server a's small call while its overrun is held: %.300q; want it refused", text)
	}

	// Every timeout of a overlapped the held overrun, so one counts, and
	// refusals never count: the filter is not disabled for a, though the
	// burst and the call after it are more than the five failures that
	// disable it.
	redact := liveRedactStatus(t)
	t.Logf("burst of %d and one call: %d ran past the deadline, %d refused; %d consecutive failures counted", burst, timeouts, refused, redact.ConsecutiveFailures)
	if redact.State != "active" || len(redact.DisabledFor) != 0 || redact.ConsecutiveFailures != 1 {
		t.Errorf("after the burst: state %s, disabled for %v, %d consecutive failures; want active and one counted (of %d timeouts and %d refusals)",
			redact.State, redact.DisabledFor, redact.ConsecutiveFailures, timeouts, refused)
	}

	// Server a comes back once its calls have ended.
	endOverruns()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		text, isErr, err := postCall(c, 500, "a__echo", small)
		if err != nil {
			t.Fatal(err)
		}
		if !isErr && strings.Contains(text, "key [REDACTED:aws-access-key-id]") {
			break
		}
		if !strings.Contains(text, "did not run: an earlier call on this server's results") {
			t.Fatalf("server a after the burst: %q isError=%v; want it redacted or refused while the burst's calls finish", text, isErr)
		}
		if time.Since(start) > 2*time.Minute { // hang guard only
			t.Fatalf("server a was still refused two minutes after its calls were let end: %q", text)
		}
	}
	if redact := liveRedactStatus(t); redact.ConsecutiveFailures != 0 || redact.State != "active" {
		t.Errorf("after server a's small result was redacted: %+v; want active, no failures in a row", redact)
	}
}

type liveFilter struct {
	Module              string   `json:"module"`
	State               string   `json:"state"`
	ConsecutiveFailures int      `json:"consecutiveFailures"`
	DisabledFor         []string `json:"disabledFor"`
}

// liveRedactStatus reads the running serve's builtin:redact status with
// 'sluice filter list --json'.
func liveRedactStatus(t *testing.T) liveFilter {
	t.Helper()
	r := sluice(t, "", "filter", "list", "--json")
	want(t, r, exitOK)
	var live []struct {
		Filters []liveFilter `json:"filters"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &live); err != nil || len(live) != 1 {
		t.Fatalf("filter list --json: %v %s", err, r.stdout)
	}
	for _, f := range live[0].Filters {
		if f.Module == "builtin:redact" {
			return f
		}
	}
	t.Fatalf("filter list --json has no builtin:redact: %s", r.stdout)
	return liveFilter{}
}
