package front

import (
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostileStdio sends the stdio front frames built to read differently to
// two JSON readers and returns every frame it answered, canonical and
// sorted (answers to different requests may arrive in any order).
func hostileStdio(t *testing.T, opts Options, modern bool, legacyVersion string) []string {
	p := startStdio(t, fastBackend(), &opts)
	meta := `"_meta":{}`
	if modern {
		meta = modernMeta("")
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`)
		p.until(1)
	} else {
		p.send(strings.Replace(legacyInit, "2025-11-25", legacyVersion, 1))
		p.until(1)
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	var frames []string
	for _, c := range hostileCalls(meta, 11) {
		frames = append(frames, c.body)
	}
	for _, f := range frames {
		p.send(f)
	}
	// Every request is answered once; read until all are.
	var out []string
	for answered := 0; answered < len(frames); {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("stdout closed after %d answers: %q", answered, out)
			}
			if !strings.Contains(l, `"method"`) {
				answered++
			}
			out = append(out, canonical(t, l))
		case <-time.After(30 * time.Second): // hang guard
			t.Fatalf("%d of %d requests answered: %q", answered, len(frames), out)
		}
	}
	sort.Strings(out)
	return out
}

// TestStdioFastPathHostileFramesAnswerAsTheSDK: a frame two readers could
// read apart is answered exactly as the SDK answers it.
func TestStdioFastPathHostileFramesAnswerAsTheSDK(t *testing.T) {
	for _, era := range hostileEras {
		t.Run(era.name, func(t *testing.T) {
			var viaSDK, viaFast atomic.Int64
			sdk := hostileStdio(t, Options{Mode: ModeFlat, noFastPath: true, fastTaken: &viaSDK}, era.modern, era.version)
			fast := hostileStdio(t, Options{Mode: ModeFlat, fastTaken: &viaFast}, era.modern, era.version)
			if viaFast.Load() == 0 {
				t.Fatal("the fast path took none of the calls")
			}
			if strings.Join(sdk, "\n") != strings.Join(fast, "\n") {
				t.Errorf("answers differ:\n sdk:\n  %s\n fast:\n  %s", strings.Join(sdk, "\n  "), strings.Join(fast, "\n  "))
			}
			t.Logf("fast path took %d", viaFast.Load())
		})
	}
}
