//go:build unix

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"sluice/gateway/mcp"
	"sluice/gateway/proc"
)

// soakCase is one kind of launch/teardown cycle.
type soakCase struct {
	name string
	args []string
	opts mcp.Options
	// act runs on a started client; its error, if any, must be typed.
	act func(ctx context.Context, c *mcp.Client) error
}

var soakCases = []soakCase{
	{name: "echo", act: callEcho},
	{name: "ignore-sigterm", args: []string{"-mode", "ignore-sigterm"}, act: callEcho},
	{name: "grandchild", args: []string{"-mode", "grandchild"}, act: callEcho},
	{name: "grandchild-stubborn", args: []string{"-mode", "grandchild,ignore-sigterm"}},
	{name: "crash", args: []string{"-mode", "crash"}, act: callEcho},
	{name: "no-init", args: []string{"-mode", "no-init"},
		opts: mcp.Options{InitializeTimeout: 150 * time.Millisecond, DiscoverTimeout: 50 * time.Millisecond}},
	{name: "exit-at-start", args: []string{"-mode", "exit-at-start"}},
	{name: "flood", args: []string{"-mode", "flood"}, opts: mcp.Options{MaxLineBytes: 64 << 10},
		act: func(ctx context.Context, c *mcp.Client) error { _, err := c.ListTools(ctx); return err }},
	{name: "huge", args: []string{"-mode", "huge", "-huge-bytes", "100000"}, opts: mcp.Options{MaxLineBytes: 64 << 10}, act: callEcho},
	{name: "stop-reading", args: []string{"-mode", "stop-reading"}},
	{name: "banner-fatal", args: []string{"-mode", "banner"}, opts: mcp.Options{NoiseFatal: true}},
	{name: "ignore-eof-slow-call", args: []string{"-mode", "ignore-eof"},
		act: func(ctx context.Context, c *mcp.Client) error {
			_, err := c.CallTool(ctx, "slow", json.RawMessage(`{"ms":600000}`), &mcp.CallOptions{Timeout: 10 * time.Millisecond})
			return err
		}},
}

// TestSoakLaunchTeardown runs 200 launch/teardown cycles across the
// misbehaving fixtures, several at a time, and requires that every one of
// them leaves no process, and the whole run no fd or goroutine, behind.
func TestSoakLaunchTeardown(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}
	const cycles, workers = 200, 8
	warmUp(t)
	defer leakCheck(t)()

	var mu sync.Mutex
	var pgids []int
	stages := map[string]int{}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				tc := soakCases[i%len(soakCases)]
				pgid, stage, err := soakCycle(t, tc, fmt.Sprintf("soak-%d", i))
				mu.Lock()
				if pgid > 0 {
					pgids = append(pgids, pgid)
				}
				stages[tc.name+"/"+stage]++
				mu.Unlock()
				if err != nil {
					t.Errorf("cycle %d (%s): %v", i, tc.name, err)
				}
			}
		}()
	}
	for i := 0; i < cycles; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	// Orphaned grandchildren linger as zombies until pid 1 reaps them; wait
	// (hang guard) until every group is gone from the process table.
	for _, pgid := range pgids {
		waitFor(t, fmt.Sprintf("process group %d to disappear", pgid), func() bool { return !proc.GroupAlive(pgid) })
	}
	t.Logf("%d cycles, %d groups, teardown stages: %v", cycles, len(pgids), stages)
}

// soakCycle runs one cycle; it returns the group id (0 when Start failed),
// the teardown stage and what went wrong.
func soakCycle(t *testing.T, tc soakCase, server string) (int, string, error) {
	spec, token := fixtureSpec(t, server, tc.args...)
	spec.StdinGrace = 20 * time.Millisecond
	spec.KillGrace = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	opts := tc.opts
	c, err := mcp.Start(ctx, spec, &opts)
	if err != nil {
		if e := typedFor(err, server); e != nil {
			return 0, "start-failed", e
		}
		if l := leftovers(token); len(l) > 0 {
			return 0, "start-failed", fmt.Errorf("failed Start left processes behind: %v", l)
		}
		return 0, "start-failed", nil
	}
	var actErr error
	if tc.act != nil {
		if err := tc.act(ctx, c); err != nil {
			actErr = typedFor(err, server)
		}
	}
	out := c.Close()
	switch {
	case actErr != nil:
		return out.Pgid, out.Stage, actErr
	case !out.Complete:
		return out.Pgid, out.Stage, fmt.Errorf("teardown incomplete: %+v", out)
	}
	if l := leftovers(token); len(l) > 0 {
		return out.Pgid, out.Stage, fmt.Errorf("processes alive after Close: %v", l)
	}
	return out.Pgid, out.Stage, nil
}

// typedFor returns nil if err is an *mcp.Error with a code that names
// server, else a description of what is wrong with it.
func typedFor(err error, server string) error {
	var e *mcp.Error
	if !asMCP(err, &e) || mcp.CodeOf(err) == "" {
		return fmt.Errorf("untyped error %T: %v", err, err)
	}
	if e.Server != server {
		return fmt.Errorf("error names server %q, want %q: %v", e.Server, server, err)
	}
	return nil
}
