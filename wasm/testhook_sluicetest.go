//go:build sluicetest

package wasm

import (
	"os"
	"time"
)

// Built only with the sluicetest tag, as the command tests build the
// binary they run (cmd/sluice's TestMain); a release build has none of
// it. With SLUICE_TESTHOOK_HOLD_OVERRUN=PATH in the environment, every
// abandoned call of a built-in, once it has returned, waits until PATH
// exists before it ends: its server's overrun episode stays open, its
// results refused, for exactly as long as the test wants, however fast
// or slow the machine runs the calls.
func init() {
	path := os.Getenv("SLUICE_TESTHOOK_HOLD_OVERRUN")
	if path == "" {
		return
	}
	hold := func() {
		for {
			if _, err := os.Stat(path); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	abandonedEnded.Store(&hold)
}
