//go:build unix

package gateway

import (
	"fmt"
	"os"
	"testing"

	"sluice/wasm"
)

// TestMain compiles every built-in filter once before any test runs (see
// warm): the cost is then paid outside every test's own deadline, and a
// slow machine makes the run slower, not a test fail.
func TestMain(m *testing.M) {
	for _, name := range wasm.BuiltinNames() {
		if _, err := warm(name); err != nil {
			fmt.Fprintf(os.Stderr, "warming built-in filter %s: %v\n", name, err)
		}
	}
	os.Exit(m.Run())
}
