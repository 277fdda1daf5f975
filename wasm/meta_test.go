package wasm

import (
	"context"
	"encoding/json"
	"testing"
)

// TestGuestReadsMeta: a guest that reads the meta document (twice, the
// second read must match) sees each call's own meta, also on a pooled
// instance whose previous call had another, and none is encoded from a
// stale call (the document is built on the first meta_read of a call).
func TestGuestReadsMeta(t *testing.T) {
	h := newTestHost(t, &Options{PoolSize: 1})
	ctx := context.Background()
	for _, mode := range []Mode{ModeText, ModeResultJSON} {
		f := mustLoad(t, h, Spec{Name: "meta-" + string(mode), Module: testGuest(t, "meta"), Mode: mode})
		in := []byte(`{"content":[]}`)
		for _, m := range []Meta{
			{Server: "fs", Tool: "read_file", Stage: "result", RequestID: "r1"},
			{Server: "other", Tool: "t\"q\u2028", Stage: "context", RequestID: "r2", Item: 3, MimeType: "text/plain"},
			{},
		} {
			o, err := f.Run(ctx, in, m)
			if err != nil {
				t.Fatalf("%s %+v: %v", mode, m, err)
			}
			want := m.encode(mode, len(in), h.opts.MaxOutputBytes)
			if string(o.Data) != string(want) {
				t.Fatalf("%s: the guest read meta %s, want %s", mode, o.Data, want)
			}
			var doc map[string]any
			if err := json.Unmarshal(o.Data, &doc); err != nil {
				t.Fatalf("meta is not JSON: %v: %s", err, o.Data)
			}
			if doc["inputBytes"] != float64(len(in)) || doc["mode"] != string(mode) {
				t.Fatalf("meta %s: wrong inputBytes or mode", o.Data)
			}
			o.Release()
		}
	}
}
