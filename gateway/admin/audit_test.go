package admin

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluice/gateway/internal/files"
)

const (
	auditChildEnv = "SLUICE_ADMIN_AUDIT_CHILD" // child number
	auditFileEnv  = "SLUICE_ADMIN_AUDIT_FILE"
	auditPerChild = 200
)

// TestMain doubles as an audit writer process for
// TestAuditLogConcurrentProcesses.
func TestMain(m *testing.M) {
	if n := os.Getenv(auditChildEnv); n != "" {
		os.Exit(auditChild(n, os.Getenv(auditFileEnv)))
	}
	os.Exit(m.Run())
}

// bigCaps makes a line of about 6.5 KiB, so a few hundred lines cross the
// rotation bound.
func bigCaps(tag string) []string {
	caps := make([]string, maxAuditCaps)
	for i := range caps {
		caps[i] = fmt.Sprintf("%s-%02d-%s", tag, i, strings.Repeat("x", 200))
	}
	return caps
}

func auditChild(n, path string) int {
	l := AuditLog{Path: path, Lock: files.Lock}
	for i := 0; i < auditPerChild; i++ {
		if err := l.Append(Decision{Kind: "review", Capabilities: bigCaps("w" + n), RequestID: n + "/" + strconv.Itoa(i), Via: "cli", Approved: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// TestAuditLogConcurrentProcesses: processes appending to one audit log
// at once, across a rotation, lose no line, duplicate none and never
// interleave two (every line parses).
func TestAuditLogConcurrentProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	const children = 4
	cmds := make([]*exec.Cmd, children)
	for i := range cmds {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), auditChildEnv+"="+strconv.Itoa(i), auditFileEnv+"="+path)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	seen := map[string]int{}
	total := 0
	for _, f := range []string{path + ".1", path} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v (the log must have rotated once)", f, err)
		}
		if fi, _ := os.Stat(f); fi.Size() > maxAuditFileBytes || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %d bytes, mode %v", f, fi.Size(), fi.Mode())
		}
		for j, ln := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			var d Decision
			if err := json.Unmarshal([]byte(ln), &d); err != nil {
				t.Fatalf("%s line %d does not parse: %v", f, j+1, err)
			}
			if len(d.Capabilities) != maxAuditCaps || d.More != 0 || d.Time.IsZero() {
				t.Fatalf("%s line %d: %+v", f, j+1, d)
			}
			seen[d.RequestID]++
			total++
		}
	}
	if total != children*auditPerChild || len(seen) != total {
		t.Fatalf("%d lines, %d distinct, want %d", total, len(seen), children*auditPerChild)
	}
	// The newest are read back (from the last 128 KiB of both files),
	// newest first.
	ds, err := AuditLog{Path: path}.Recent(maxAuditMemory)
	if err != nil || len(ds) < 2*(auditTailBytes/(8<<10)) {
		t.Fatalf("Recent: %d decisions, %v", len(ds), err)
	}
	for i := 1; i < len(ds); i++ {
		if ds[i].Time.After(ds[i-1].Time) {
			t.Fatalf("Recent is not newest first at %d", i)
		}
	}
}

// TestAuditLogTornLine: a line cut short by a writer that died does not
// swallow the next decision, and Recent skips it; Recent reaches into the
// rotated file when the current one holds too few.
func TestAuditLogTornLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l := AuditLog{Path: path, Lock: files.Lock}
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := l.Append(Decision{Time: old, Kind: "trust", Capabilities: []string{"a"}, Via: "cli", Approved: true}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-01-01T00:00:01Z","kind":"trust","capab`)
	f.Close()
	if err := l.Append(Decision{Kind: "review", Capabilities: []string{"b__t"}, Via: "cli", Approved: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("lines %q", lines)
	}
	var d Decision
	if err := json.Unmarshal([]byte(lines[2]), &d); err != nil || d.Kind != "review" {
		t.Fatalf("the decision after a torn line: %v %+v", err, d)
	}
	ds, err := l.Recent(10)
	if err != nil || len(ds) != 2 || ds[0].Kind != "review" || ds[1].Kind != "trust" || !ds[1].Time.Equal(old) {
		t.Fatalf("Recent: %+v %v", ds, err)
	}

	// Rotated: the current file has one, .1 the rest.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(Decision{Kind: "untrust", Capabilities: []string{"a"}, Via: "cli"}); err != nil {
		t.Fatal(err)
	}
	ds, err = l.Recent(10)
	if err != nil || len(ds) != 3 || ds[0].Kind != "untrust" || ds[1].Kind != "review" {
		t.Fatalf("Recent across the rotation: %+v %v", ds, err)
	}
	if ds, _ := l.Recent(1); len(ds) != 1 || ds[0].Kind != "untrust" {
		t.Fatalf("Recent(1): %+v", ds)
	}
	// A symlink in the log's place is refused.
	os.Remove(path)
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), path); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(Decision{Kind: "trust", Via: "cli"}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Append through a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); !os.IsNotExist(err) {
		t.Fatal("the symlink's target was written")
	}
}
