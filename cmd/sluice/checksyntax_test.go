package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckReportsYAMLErrorsAtTheirLine: check names a YAML syntax error
// as file:line (file:line:col where the line shows the cause), never at
// column 0, and says how to fix it.
func TestCheckReportsYAMLErrorsAtTheirLine(t *testing.T) {
	w := newWorld(t)
	file := filepath.Join(w.home, "mcp.yaml")
	for _, c := range []struct{ body, want string }{
		{"servers:\n  a:\n    command: [unclosed\n", file + ":3: error: YAML syntax error: did not find expected ',' or ']'; the file contributes nothing (fix: close the [ list"},
		{"servers:\n\ta: {command: /bin/cat}\n", file + ":2:1: error: YAML syntax error: found character that cannot start any token; the file contributes nothing (fix: indent with spaces"},
	} {
		w.writeUser(c.body)
		r := sluiceProc(t, "", "check")
		want(t, r, exitFailure, c.want)
		if strings.Contains(r.stdout+r.stderr, ":0:") {
			t.Errorf("a column 0:\n%s", r)
		}
	}
}
