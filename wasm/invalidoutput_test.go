package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"sluice/wasm/guest"
)

// TestRefusedOutputKeepsTheInstance: output the host refuses as invalid
// comes from a guest that returned normally, so its instance goes back to
// the pool: twenty calls whose output is refused run on the instance
// made at load, none made on a call's path (coldStarts), not twenty. Before, each refused output closed the instance and the next
// call made a new one (about 10 ms for a Go guest: the built-in shape
// filter on invalid inputs, what its fuzz target mostly feeds it, ran at
// 13 ms a call against 43 µs).
func TestRefusedOutputKeepsTheInstance(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1, Offload: nopHostOffload})
	fl := mustLoad(t, h, Spec{Builtin: "shape", Config: json.RawMessage(fmt.Sprintf(`{"budgetBytes":%d}`, guest.MinBudget))})
	// invalid JSON (a misspelt false), walked leniently and shaped into
	// output that is not valid JSON either
	in := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 3000) + `"}],"isError":fals}`)
	for i := range 20 {
		_, err := fl.Run(context.Background(), in, Meta{})
		var invalid *InvalidOutputError
		if !errors.As(err, &invalid) {
			t.Fatalf("call %d: %v; want the output refused as invalid", i, err)
		}
	}
	if n := fl.pool.coldStarts.Load(); n != 0 {
		t.Errorf("%d instances made for 20 calls whose output was refused; want none beyond the one made at load", n)
	}
	// and the instance still answers a valid call
	out, err := fl.Run(context.Background(), []byte(`{"content":[{"type":"text","text":"`+strings.Repeat("y", 3000)+`"}]}`), Meta{ValidInput: true})
	if err != nil || out.Status != StatusReplaced {
		t.Fatalf("valid call after them: %v %v", out.Status, err)
	}
	if n := fl.pool.coldStarts.Load(); n != 0 {
		t.Errorf("%d instances made; want none", n)
	}
}

// TestReportedErrorKeepsTheInstance: likewise for a guest that returns
// reporting an error (the built-in redact filter on input that is not a
// JSON object): the next call runs on the same instance.
func TestReportedErrorKeepsTheInstance(t *testing.T) {
	h := newTestHost(t, &Options{DisableAfter: -1})
	fl := mustLoad(t, h, Spec{Builtin: "redact"})
	for i := range 20 {
		_, err := fl.Run(context.Background(), []byte(`{"content":[`), Meta{})
		var reported *ReportedError
		if !errors.As(err, &reported) {
			t.Fatalf("call %d: %v; want an error the filter reported", i, err)
		}
	}
	out, err := fl.Run(context.Background(), []byte(`{"content":[{"type":"text","text":"id AKIAIOSFODNN7EXAMPLE"}]}`), Meta{ValidInput: true})
	if err != nil || out.Status != StatusReplaced {
		t.Fatalf("valid call after them: %v %v", out.Status, err)
	}
	if n := fl.pool.coldStarts.Load(); n != 0 {
		t.Errorf("%d instances made for 21 calls, 20 of them reporting an error; want none beyond the one made at load", n)
	}
}
