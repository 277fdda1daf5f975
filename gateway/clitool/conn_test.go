package clitool

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func recvTimeout(t *testing.T, c *Conn) string {
	t.Helper()
	type r struct {
		b   []byte
		err error
	}
	ch := make(chan r, 1)
	go func() {
		b, err := c.Receive()
		ch <- r{b, err}
	}()
	select {
	case got := <-ch:
		if got.err != nil {
			t.Fatalf("Receive: %v", got.err)
		}
		return string(got.b)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
	return ""
}

func TestConn(t *testing.T) {
	exe := self(t)
	add := stub(t, gitAdd(exe), "argv", nil)
	log := stub(t, gitLog(exe), "lines", nil)
	c := NewConn("git", "1", []*Tool{add, log})
	defer c.Close()
	send := func(s string) {
		if err := c.Send([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}}`)
	if got := recvTimeout(t, c); !strings.Contains(got, `"id":0,"error":{"code":-32601`) {
		t.Fatalf("server/discover answered %s", got)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if got := recvTimeout(t, c); got != `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{"listChanged":false}},"protocolVersion":"2025-06-18","serverInfo":{"name":"git","version":"1"}}}` {
		t.Fatalf("initialize answered %s", got)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`)
	got := recvTimeout(t, c)
	var list struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(got), &list); err != nil || len(list.Result.Tools) != 2 || string(list.Result.Tools[0]) != string(add.Definition()) {
		t.Fatalf("tools/list answered %s", got)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"paths":["x y"]}}}`)
	if got := recvTimeout(t, c); got != `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"[\"add\",\"--\",\"x y\"]"}]}}` {
		t.Fatalf("tools/call answered %s", got)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"log","arguments":{"author":"--upload-pack=x"}}}`)
	if got := recvTimeout(t, c); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, `argument \"author\": starts with \"-\"`) {
		t.Fatalf("refused call answered %s", got)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	if got := recvTimeout(t, c); !strings.Contains(got, `"id":4,"error":{"code":-32602,"message":"unknown tool \"nope\""`) {
		t.Fatalf("unknown tool answered %s", got)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if got := recvTimeout(t, c); got != `{"jsonrpc":"2.0","id":5,"result":{}}` {
		t.Fatalf("ping answered %s", got)
	}
	send(`not json`)
	if got := recvTimeout(t, c); !strings.Contains(got, `"id":null,"error":{"code":-32700`) {
		t.Fatalf("garbage answered %s", got)
	}
}

// TestConnCancelAndClose: a cancelled call is torn down and not answered;
// Close returns only after a running call's process group is gone.
func TestConnCancelAndClose(t *testing.T) {
	dir := t.TempDir()
	pids1, pids2 := filepath.Join(dir, "p1"), filepath.Join(dir, "p2")
	t1 := stub(t, gitAdd(self(t)), "grandchild", map[string]string{"STUB_PIDS": pids1})
	s2 := gitLog(self(t))
	t2 := stub(t, s2, "grandchild", map[string]string{"STUB_PIDS": pids2})
	c := NewConn("x", "1", []*Tool{t1, t2})
	c.Send([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"paths":["a"]}}}`))
	waitFile(t, pids1)
	c.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
	l1, g1 := readPids(t, pids1)
	if !gone(l1) || !gone(g1) {
		t.Fatal("the cancelled call's processes survived")
	}
	c.Send([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"log","arguments":{}}}`))
	waitFile(t, pids2)
	c.Close()
	l2, g2 := readPids(t, pids2)
	if alive(l2) || alive(g2) {
		t.Fatal("Close returned while a call's processes were alive")
	}
	if _, err := c.Receive(); err != io.EOF {
		t.Fatalf("Receive after Close = %v, want io.EOF (and no answer to the cancelled call)", err)
	}
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)); err == nil {
		t.Fatal("Send after Close succeeded")
	}
}
