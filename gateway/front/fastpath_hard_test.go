package front

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestStdioFastPathDrainBoundCancelsCalls: a call the stdio fast path
// runs, still running when stdin ends and the drain bound expires, is
// cancelled then (its context is done), answered with the shutdown's
// tool error, and ServeStdio returns.
func TestStdioFastPathDrainBoundCancelsCalls(t *testing.T) {
	b := newFake()
	b.setItems(KindTools, toolItem("up", "wait", "Waits."))
	started := make(chan struct{})
	b.call = func(ctx context.Context, _ CallRequest, _ Peer) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var taken atomic.Int64
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(context.Background(), b, &Options{Mode: ModeFlat, Logger: quietLogger(), NoSignals: true,
			ShutdownTimeout: 100 * time.Millisecond, fastTaken: &taken}, inR, outW)
		outW.Close()
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The call goes once initialize is answered: before, the SDK's path
	// answers it.
	if _, err := io.WriteString(inW, legacyInit+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lines:
	case <-time.After(10 * time.Second):
		t.Fatal("initialize was not answered")
	}
	frames := []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__wait","arguments":{}}}`}
	if _, err := io.WriteString(inW, strings.Join(frames, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never started")
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after the drain bound")
	}
	answered := false
	for l := range lines {
		if strings.Contains(l, `"id":2,`) {
			if !strings.Contains(l, "shut down before this call finished") {
				t.Fatalf("the straggler was answered %s, want the shutdown's tool error", l)
			}
			answered = true
		}
	}
	if !answered {
		t.Fatal("the cancelled call was not answered")
	}
	if taken.Load() != 1 {
		t.Fatalf("the fast path took %d calls, want 1", taken.Load())
	}
}
