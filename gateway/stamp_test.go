package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeInPlace rewrites path's content in place (same inode, as an editor
// that saves in place does) and sets its modification time back to mod,
// as 'touch -r' restoring the old time does.
func writeInPlace(t *testing.T, path, body string, mod time.Time) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(body); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// An edit of the user file that keeps its size and (restored) modification
// time reaches calls to the running server within RecheckEvery, as any
// other edit does: here it hides the tool being called.
func TestSameSizeEditWithRestoredTimeIsSeen(t *testing.T) {
	w := newWorld(t)
	path := filepath.Join(w.home, "mcp.yaml")
	decl := "servers:\n" + fixture(t, "fx") + "    tools: {deny: [zzzz]}\n"
	if err := os.WriteFile(path, []byte(decl), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	g := w.open(func(o *Options) { o.now = clk.now })
	if _, err := g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: echoArgs}); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	writeInPlace(t, path, strings.Replace(decl, "deny: [zzzz]", "deny: [echo]", 1), before.ModTime())
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
		t.Fatalf("the edit must keep file, size and modification time: %v %v -> %v %v", before.Size(), before.ModTime(), after.Size(), after.ModTime())
	}
	clk.advance(RecheckEvery)
	_, err = g.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: echoArgs})
	if KindOf(err) != KindHidden {
		t.Fatalf("after the edit the tool must be hidden: %v", err)
	}
}

// A settled file (its times older than the racy window) is looked at with
// a stat alone, and an edit that restores its modification time is still
// seen: the status-change time moved.
func TestRestoredTimeEditOfSettledFileIsSeen(t *testing.T) {
	w := newWorld(t)
	path := filepath.Join(w.home, "mcp.yaml")
	decl := "servers:\n" + fixture(t, "fx") + "    tools: {deny: [zzzz]}\n"
	if err := os.WriteFile(path, []byte(decl), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	g2 := w.open(func(o *Options) { o.now = clk.now; o.racy = time.Nanosecond })
	if _, err := g2.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: echoArgs}); err != nil {
		t.Fatal(err)
	}
	// The subject is an edit whose status-change time differs from the
	// stamped one: write until the file system's clock has ticked.
	stamped := statStamp(path)
	for i := 0; ; i++ {
		writeInPlace(t, path, strings.Replace(decl, "deny: [zzzz]", "deny: [echo]", 1), before.ModTime())
		if !statHasChange || !statStamp(path).chg.Equal(stamped.chg) || i == 1000 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	clk.advance(RecheckEvery)
	if _, err := g2.Call(ctx(t), CallRequest{Capability: "fx__echo", Arguments: echoArgs}); KindOf(err) != KindHidden {
		t.Fatalf("a settled file edited with its time restored: want hidden, got %v", err)
	}
}

// A stamp taken while the file's times are recent carries a content
// hash, and an edit that leaves every stat field as it was (a second
// same-size write within one tick of the file system's clock, which a
// test cannot make happen at will: simulated by copying the stat fields)
// differs by content. Once a look finds the file older than the window
// and its content as hashed, later looks stat it alone.
func TestStampComparesContentWhileRacy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.yaml")
	if err := os.WriteFile(path, []byte("servers: {a: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prev := restamp(fileStamps{}, racyWindow, path)
	if !prev[0].ok || !prev[0].hashed {
		t.Fatalf("a file written just now must be stamped with its hash: %+v", prev[0])
	}
	if now := restamp(prev, racyWindow, path); !now.same(prev) {
		t.Fatal("an unchanged file must keep its stamp")
	}
	if err := os.WriteFile(path, []byte("servers: {b: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := restamp(prev, racyWindow, path)
	if !now[0].hashed {
		t.Fatal("a look after a hashed stamp must hash too")
	}
	now[0].mod, now[0].chg, now[0].size, now[0].dev, now[0].ino = prev[0].mod, prev[0].chg, prev[0].size, prev[0].dev, prev[0].ino
	if now.same(prev) {
		t.Fatal("an edit that kept every stat field must differ by content")
	}

	// Past the window (a window of 1ns): the look that follows a hashed
	// stamp still hashes and confirms the content; the settled stamp
	// then has no hash, and the next look does not read the file.
	prev = restamp(fileStamps{}, racyWindow, path)
	now = restamp(prev, time.Nanosecond, path)
	if !now[0].hashed || !now.same(prev) {
		t.Fatalf("the first look past the window must confirm the content: %+v", now[0])
	}
	settled := now.settled(time.Nanosecond)
	if settled[0].hashed || !statHasChange {
		if statHasChange {
			t.Fatal("a confirmed stamp past the window must drop its hash")
		}
		return // no status-change time here: every look hashes
	}
	if next := restamp(settled, time.Nanosecond, path); next[0].hashed || !next.same(settled) {
		t.Fatalf("a settled stamp is compared by stat alone: %+v", next[0])
	}
	// A hashed stamp never matches an unhashed one of the same stat.
	if now.same(settled) || settled.same(now) {
		t.Fatal("a hashed and an unhashed stamp must not count as the same version")
	}
	// A missing file is its own version.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if gone := restamp(settled, time.Nanosecond, path); gone.same(settled) || !gone.same(fileStamps{}) {
		t.Fatal("a removed file must differ from its last stamp")
	}
}
