package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarktest"
)

// TestScripts runs testdata/*.star with the starlarktest assert module
// against the fake host; every script must end without error.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.star")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	assertMod, err := starlarktest.LoadAssertModule()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r := run(context.Background(), newFakeHost(), filepath.Base(f), string(src), nil, assertMod, func(th *starlark.Thread) {
				starlarktest.SetReporter(th, t)
			})
			if r.Error != nil {
				t.Fatalf("%s: %v\nbacktrace: %v\nlogs: %v", f, r.Error, r.Error.Backtrace, r.Logs)
			}
			if string(r.Result) == "null" {
				t.Errorf("%s: no result", f)
			}
		})
	}
}
