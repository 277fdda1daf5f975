package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// pipedServe runs 'sluice serve ARGS' as a process with the frames on
// stdin (an initialize handshake first) and returns its raw stdout: serve
// answers every request read before stdin's end.
func pipedServe(t *testing.T, args []string, frames ...string) []byte {
	t.Helper()
	in := strings.Join(append([]string{
		`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, frames...), "\n") + "\n"
	r := sluiceProc(t, in, append([]string{"serve"}, args...)...)
	if r.code != 0 {
		t.Fatalf("serve %v: %s", args, r)
	}
	return []byte(r.stdout)
}

// TestDamagedCatalogNeverReachesTheAgentAsInvalidUTF8: a recorded catalog
// whose schema holds bytes that are not UTF-8 (a damaged or edited cache
// file; json.Valid lets them through inside strings) reaches no agent as
// such: not through describe, not through a flat tools/list. Every line
// serve writes is UTF-8.
func TestDamagedCatalogNeverReachesTheAgentAsInvalidUTF8(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	want(t, sluice(t, "", "refresh", "fx"), 0, "refreshed")
	paths, _ := filepath.Glob(filepath.Join(w.cache, "catalogs", "*.json"))
	if len(paths) != 1 {
		t.Fatalf("catalog files: %v", paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	from := []byte(`"properties":{"text":{"type":"string"}}`)
	if !bytes.Contains(data, from) {
		t.Fatalf("the fixture's echo schema changed: %s", data)
	}
	data = bytes.Replace(data, from, []byte("\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"bad \xff\xfe here\"}}"), 1)
	if err := os.WriteFile(paths[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator accepts whatever review shows (or finds nothing to
	// review): either way no agent gets the bytes.
	sluice(t, "", "review", "fx", "--accept")
	for _, mode := range []string{"gateway", "flat", "auto"} {
		out := pipedServe(t, []string{"--mode", mode},
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"describe","arguments":{"capabilities":["fx__echo"]}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"find","arguments":{"query":"echo"}}}`,
		)
		for i, line := range bytes.Split(out, []byte("\n")) {
			if !utf8.Valid(line) {
				t.Fatalf("mode %s: line %d of serve's stdout is not UTF-8: %q", mode, i, line)
			}
		}
	}
}
