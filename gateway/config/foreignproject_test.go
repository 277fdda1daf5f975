package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForeignProjectIsSkipped: a project root found by walking up from the
// working directory may be a directory another user can write (a shared
// /tmp). A .sluice there that belongs to another user is not read: its
// servers are not listed (nor their trust remedies offered), with a
// warning naming the owner. Passing --project uses it on purpose.
func TestForeignProjectIsSkipped(t *testing.T) {
	shared := t.TempDir()
	work := filepath.Join(shared, "work", "sub")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(shared, ProjectDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, ProjectDirName, ProjectFileName), []byte("servers:\n  planted:\n    command: cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	owner := filepath.Join(shared, ProjectDirName)
	old := fileOwner
	t.Cleanup(func() { fileOwner = old })
	fileOwner = func(p string) (int, bool) {
		if p == owner {
			return 4242, true
		}
		return 0, false
	}
	cfg := t.TempDir()
	skippedUnlessChosen(t, work, shared, cfg)
	fileOwner = old
	l := Load(LoadOptions{Cwd: work, ConfigDir: cfg, Getenv: func(string) string { return "" }})
	if _, ok := l.Server("planted"); !ok {
		t.Fatalf("a project of this user was not loaded: %v", l.Diagnostics)
	}
}

// TestForeignProjectSwappedAfterTheLookIsSkipped: the owner of a shared
// directory can replace the project file between the look at its path
// and the read. The open file is what counts: a file that is another
// user's once open (the path looked like this user's) is skipped the
// same way; with --project it is read on purpose.
func TestForeignProjectSwappedAfterTheLookIsSkipped(t *testing.T) {
	shared := t.TempDir()
	work := filepath.Join(shared, "work")
	if err := os.MkdirAll(filepath.Join(shared, ProjectDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, ProjectDirName, ProjectFileName), []byte("servers:\n  planted:\n    command: cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := openedOwner
	t.Cleanup(func() { openedOwner = old })
	openedOwner = func(os.FileInfo) (int, bool) { return 4242, true } // what the path turned into by the read
	skippedUnlessChosen(t, work, shared, t.TempDir())
}

// skippedUnlessChosen checks that the project at shared, found by walking
// up from work, is not loaded and is named in a warning with its owner
// (uid 4242) and the way out, and that --project shared loads it.
func skippedUnlessChosen(t *testing.T, work, shared, cfg string) {
	t.Helper()
	l := Load(LoadOptions{Cwd: work, ConfigDir: cfg, Getenv: func(string) string { return "" }})
	if _, ok := l.Server("planted"); ok {
		t.Fatal("a discovered project file of another user was loaded")
	}
	found := false
	for _, d := range l.Diagnostics {
		if d.Severity == SeverityWarning && strings.Contains(d.Message, "another user (uid 4242)") && strings.Contains(d.Fix, "--project") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no warning naming the owner: %v", l.Diagnostics)
	}
	l = Load(LoadOptions{Cwd: work, Project: shared, ConfigDir: cfg, Getenv: func(string) string { return "" }})
	if _, ok := l.Server("planted"); !ok {
		t.Fatalf("--project on purpose did not load it: %v", l.Diagnostics)
	}
}

// TestDiscoveredProjectFileOfAnotherUserIsNotEdited: an edit of a
// discovered project file looks at the owner of the file it opens (the
// path may have been swapped since the loader looked), both when working
// the edit out and again before writing; nothing is written. A project
// named on purpose (Discovered false) is edited.
func TestDiscoveredProjectFileOfAnotherUserIsNotEdited(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ProjectDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ProjectFileName)
	body := "servers:\n  theirs:\n    command: cat\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	old := openedOwner
	t.Cleanup(func() { openedOwner = old })
	foreign := func(os.FileInfo) (int, bool) { return 4242, true }
	tg := EditTarget{File: file, Scope: ScopeProject, Base: filepath.Dir(dir), Discovered: true, Getenv: func(string) string { return "" }}
	refused := func(err error) {
		t.Helper()
		var ee *EditError
		if !errors.As(err, &ee) || !strings.Contains(ee.Message, "belongs to another user, uid 4242") || !strings.Contains(ee.Message, "--project-dir DIR") {
			t.Fatalf("edit of another user's discovered project file: %v", err)
		}
		if got, _ := os.ReadFile(file); string(got) != body {
			t.Fatalf("the file was written:\n%s", got)
		}
	}
	openedOwner = foreign
	_, err := AddServer(tg, "mine", ServerSpec{Command: "cat"})
	refused(err)

	openedOwner = old
	e, err := AppendServers(tg, func(indent, step string) string { return indent + "mine:\n" + indent + step + "command: cat\n" }, "mine")
	if err != nil {
		t.Fatal(err)
	}
	openedOwner = foreign // swapped between the plan and the write
	refused(e.Write())

	tg.Discovered = false
	if _, err := AddServer(tg, "mine", ServerSpec{Command: "cat"}); err != nil {
		t.Fatalf("a project named on purpose: %v", err)
	}
}

// TestProjectRootOfAnotherUserWithoutSluiceIsForeign: a root found
// through another user's .git, or a root directory that is theirs, with no
// .sluice yet, is theirs too: the loader names it foreign (so no edit
// creates a file there), and --project uses it on purpose.
func TestProjectRootOfAnotherUserWithoutSluiceIsForeign(t *testing.T) {
	for _, marker := range []string{".git", ""} {
		shared := t.TempDir()
		work := filepath.Join(shared, "sub")
		if err := os.MkdirAll(filepath.Join(shared, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		theirs := filepath.Join(shared, marker)
		old := fileOwner
		fileOwner = func(p string) (int, bool) {
			if p == theirs {
				return 4242, true
			}
			return 0, false
		}
		l := Load(LoadOptions{Cwd: work, ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }})
		if l.Foreign == nil || l.Foreign.UID != 4242 || l.Foreign.Path != theirs {
			t.Errorf("a root whose %q is another user's: Foreign %+v", marker, l.Foreign)
		}
		l = Load(LoadOptions{Cwd: work, Project: shared, ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }})
		if l.Foreign != nil {
			t.Errorf("--project on purpose: Foreign %+v", l.Foreign)
		}
		fileOwner = old
	}
}

// TestCreatedProjectDirOfAnotherUserIsNotWritten: a discovered project's
// .sluice made by another user between the plan and the write (or a link
// to a directory of theirs) is refused by the write that creates the
// file; nothing is written there.
func TestCreatedProjectDirOfAnotherUserIsNotWritten(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, ProjectDirName, ProjectFileName)
	tg := EditTarget{File: file, Scope: ScopeProject, Base: root, Discovered: true, Getenv: func(string) string { return "" }}
	render := func(indent, step string) string { return indent + "mine:\n" + indent + step + "command: cat\n" }
	e, err := AppendServers(tg, render, "mine")
	if err != nil {
		t.Fatal(err)
	}
	old := openedOwner
	t.Cleanup(func() { openedOwner = old })
	openedOwner = func(fi os.FileInfo) (int, bool) { return 4242, fi.Name() == ProjectDirName }
	err = e.Write()
	var ee *EditError
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "belongs to another user, uid 4242") {
		t.Fatalf("write into another user's .sluice: %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the file was written: %v", err)
	}
	openedOwner = old
	tg.Discovered = false
	if e, err = AppendServers(tg, render, "mine"); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(); err != nil {
		t.Fatalf("a project named on purpose: %v", err)
	}
}
