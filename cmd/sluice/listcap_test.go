package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestServeListingBoundsHostileTool: the fixture's tool with a 135 KB
// title reaches the agent's tools/list (flat mode, and exposed in gateway
// mode) within the per-tool cap, says how to see its whole definition,
// and is still callable by its listed name.
func TestServeListingBoundsHostileTool(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx", "-mode", "leaky") + "    expose: [\"leak_long_title\"]\n    actionClass: read\n")
	want(t, sluice(t, "", "refresh", "fx"), 0, "refreshed")
	for _, tc := range []struct{ mode, whole string }{
		{"flat", "sluice describe fx__leak_long_title"},
		{"gateway", `describe {"capabilities":["fx__leak_long_title"]}`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			a := startStdioAgent(t, "--mode", tc.mode)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := a.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v\n%s", err, a.stderr.String())
			}
			all, _ := json.Marshal(res)
			if len(all) > 128<<10 {
				t.Errorf("tools/list carries %d bytes", len(all))
			}
			found := false
			for _, tl := range res.Tools {
				if tl.Name != "fx__leak_long_title" {
					continue
				}
				found = true
				raw, _ := json.Marshal(tl)
				if len(raw) > 8<<10+64 {
					t.Errorf("the tool's definition is listed with %d bytes", len(raw))
				}
				if !strings.Contains(tl.Description, "definition shortened") || !strings.Contains(tl.Description, tc.whole) {
					t.Errorf("the shortened definition does not say how to see it whole: %q", tl.Description)
				}
			}
			if !found {
				t.Fatalf("fx__leak_long_title is not listed")
			}
			if _, got := a.call(t, "fx__leak_long_title", nil); !strings.Contains(got, "titled") {
				t.Fatalf("calling the shortened tool: %s", got)
			}
		})
	}
}
