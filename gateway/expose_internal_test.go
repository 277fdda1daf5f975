package gateway

import (
	"testing"

	"sluice/gateway/config"
)

// TestMayExpose: the launch filter of Prepare may launch a server a glob
// turns out not to name, never skip one it does.
func TestMayExpose(t *testing.T) {
	for _, tc := range []struct {
		glob, id string
		want     bool
	}{
		{"fs__read", "fs", true},
		{"fs__read", "fsx", false},
		{"fs__*", "fs", true},
		{"*__echo", "anything", true},
		{"f*", "fs", true},
		{"f*", "gh", false},
		{"fs_*", "fs", true},   // matches fs__x
		{"fs_*", "fs_a", true}, // and fs_a__x
		{"g?__x", "gh", true},  // the literal prefix "g" allows it
		{"g?__x", "fs", false},
		{"[fg]s__x", "fs", true},
	} {
		if got := mayExpose([]exposeRule{{glob: tc.glob}}, tc.id); got != tc.want {
			t.Errorf("mayExpose(%q, %q) = %v, want %v", tc.glob, tc.id, got, tc.want)
		}
	}
	// Sound on a grid of globs, ids and tools.
	globs := []string{"fs__read", "f*", "*s__*", "fs_*", "?s__r*", "[a-g]*__x", "gh__*", "*", "*__*_file", "fs\\_\\_read"}
	ids := []string{"fs", "gh", "fs_a", "a", "fsx"}
	tools := []string{"read", "x", "read_file", "a__b"}
	for _, g := range globs {
		for _, id := range ids {
			if mayExpose([]exposeRule{{glob: g}}, id) {
				continue
			}
			for _, tool := range tools {
				if config.MatchGlob(g, id+"__"+tool) {
					t.Errorf("mayExpose(%q, %q) is false but it names %s__%s", g, id, id, tool)
				}
			}
		}
	}
}
