package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestServeStdioAnswersEveryRequestID: through the built binary, every
// request an agent sends on stdio gets an answer, whatever its id: an id
// beyond 2^53 or beyond int64 gets the answer the SDK gives (the id as it
// reads it, through a float64), a null id and the id of a request still
// in flight each get -32600 with id null (the SDK alone would answer
// neither, and would run the null-id call), and neither of those runs.
func TestServeStdioAnswersEveryRequestID(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	s := startStdio(t, "--mode", "flat")
	call := func(id, tool, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	// The slow call is still running when its duplicate is read: the
	// frame filter registers an id when it reads the line.
	s.send(call("5", "fx__slow", `{"ms":3000}`))
	s.send(call("5", "fx__echo", `{"text":"duplicate"}`))
	s.send(call("null", "fx__echo", `{"text":"null id"}`))
	big := []string{"9007199254740993", "123456789012345678901234567890"}
	for i, id := range big {
		s.send(call(id, "fx__echo", `{"text":"big `+strconv.Itoa(i)+`"}`))
	}
	s.wait("5")
	// The ids the SDK answers with: what its decoder makes of them.
	for i, id := range big {
		var f float64
		if err := json.Unmarshal([]byte(id), &f); err != nil {
			t.Fatal(err)
		}
		m := s.wait(strconv.FormatInt(int64(f), 10))
		if !strings.Contains(string(m["result"]), "big "+strconv.Itoa(i)) {
			t.Fatalf("id %s: %s", id, m["result"])
		}
	}
	s.next = 20
	if got := s.request("ping", "{}"); got != "{}" {
		t.Fatalf("ping after the odd ids: %s", got)
	}
	var nulls []string
	for _, line := range strings.Split(strings.TrimSpace(s.out.String()), "\n") {
		if strings.Contains(line, `"id":null`) {
			nulls = append(nulls, line)
		}
	}
	want := []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: request id 5 is already in use by a request in flight; send each request with an id of its own"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the request id is null; an id must be a string or an integer (a notification has no id member)"}}`,
	}
	if strings.Join(nulls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("answers with id null:\n%s\nwant:\n%s\nstdout:\n%s", strings.Join(nulls, "\n"), strings.Join(want, "\n"), s.out.String())
	}
	if out := s.out.String(); strings.Contains(out, "duplicate") || strings.Contains(out, "null id") {
		t.Fatalf("a refused request ran:\n%s", out)
	}
	if m := s.wait("5"); !strings.Contains(string(m["result"]), "content") {
		t.Fatalf("the slow call: %s", m)
	}
}
