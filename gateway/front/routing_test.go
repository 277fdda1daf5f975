package front

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUnclaimedLogReachesASingleSessionOnly: an upstream log message that
// no request claims (front.EventLog) is delivered when one session is
// open and dropped when several are, where it could reach the wrong agent.
func TestUnclaimedLogReachesASingleSessionOnly(t *testing.T) {
	b := newFake()
	f, err := newFront(b, &Options{Mode: ModeFlat, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.start(ctx)
	defer f.close()
	type agent struct {
		cs   *mcp.ClientSession
		logs chan *mcp.LoggingMessageParams
	}
	open := func(name string) agent {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := f.srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		logs := make(chan *mcp.LoggingMessageParams, 16)
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
		})
		cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		return agent{cs, logs}
	}
	a, other := open("a"), open("b")
	b.emit(Event{Kind: EventLog, Server: "up", Params: json.RawMessage(`{"level":"warning","data":"while two sessions are open"}`)})
	// Once b is gone, a is the only session: the next message reaches it,
	// and nothing came before it (one session's messages stay in order).
	other.cs.Close()
	waitFor(t, "one session left", func() bool {
		n := 0
		for range f.srv.Sessions() {
			n++
		}
		return n == 1
	})
	b.emit(Event{Kind: EventLog, Server: "up", Params: json.RawMessage(`{"level":"warning","data":"with one session open"}`)})
	select {
	case m := <-a.logs:
		if s, _ := m.Data.(string); s != "with one session open" {
			t.Fatalf("first message the remaining session got = %+v; the one sent while two sessions were open must be dropped", m.Data)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a log message with one session open was not delivered")
	}
}
