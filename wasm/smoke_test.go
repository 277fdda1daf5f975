package wasm

import (
	"context"
	"testing"
)

func TestSmokeUpper(t *testing.T) {
	h := newTestHost(t, nil)
	f := mustLoad(t, h, Spec{Name: "upper", Module: testGuest(t, "upper")})
	out, err := f.Run(context.Background(), []byte("hello, wörld"), Meta{Tool: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Data) != "HELLO, WöRLD" || out.Status != StatusReplaced {
		t.Fatalf("got %q %v", out.Data, out.Status)
	}
}
