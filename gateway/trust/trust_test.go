package trust

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	childEnv     = "SLUICE_TRUST_TEST_CHILD"
	childFileEnv = "SLUICE_TRUST_TEST_FILE"
	childRootEnv = "SLUICE_TRUST_TEST_ROOT"
	perChild     = 10
)

// TestMain doubles as a writer process for TestConcurrentProcesses: when
// re-executed with SLUICE_TRUST_TEST_CHILD=<n> it upserts perChild records
// and exits.
func TestMain(m *testing.M) {
	if n := os.Getenv(childEnv); n != "" {
		os.Exit(child(n))
	}
	os.Exit(m.Run())
}

func child(n string) int {
	file, root := os.Getenv(childFileEnv), os.Getenv(childRootEnv)
	for i := 0; i < perChild; i++ {
		rec := Record{ProjectRoot: root, ID: fmt.Sprintf("w%s-s%d", n, i), Digest: hexDigest(n + strconv.Itoa(i)), ActionClass: ActionRead}
		if err := Upsert(file, rec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func hexDigest(seed string) string {
	h := fmt.Sprintf("%x", []byte(seed))
	return (h + strings.Repeat("0", 64))[:64]
}

func TestConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	root := t.TempDir()
	file := FilePath(dir)
	const procs = 8
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(p), childFileEnv+"="+file, childRootEnv+"="+root)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d (pid %d): %v\n%s", i, cmd.Process.Pid, err, outs[i])
		}
	}
	st := Read(file)
	if len(st.Diagnostics) != 0 {
		t.Fatalf("diagnostics: %v", st.Diagnostics)
	}
	if len(st.Records) != procs*perChild {
		t.Fatalf("got %d records, want %d: a concurrent write was lost", len(st.Records), procs*perChild)
	}
	croot, _ := CanonicalRoot(root)
	for p := 0; p < procs; p++ {
		for i := 0; i < perChild; i++ {
			if _, ok := st.Find(croot, fmt.Sprintf("w%d-s%d", p, i)); !ok {
				t.Errorf("missing w%d-s%d", p, i)
			}
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".trust.json.*.tmp")); len(m) != 0 {
		t.Errorf("temp files left: %v", m)
	}
}

func TestConcurrentGoroutines(t *testing.T) {
	file := FilePath(t.TempDir())
	root := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := 0; g < 40; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Upsert(file, Record{ProjectRoot: root, ID: fmt.Sprintf("g%d", g), Digest: hexDigest("g")})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(Read(file).Records); n != 40 {
		t.Fatalf("got %d records, want 40", n)
	}
}

func validFile(n int) []byte {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{ProjectRoot: "/p", ID: fmt.Sprintf("s%d", i), Digest: hexDigest("x"), ActionClass: ActionUnknown, TrustedAt: time.Unix(0, 0).UTC()}
	}
	b, err := Encode(recs)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecode(t *testing.T) {
	d := strings.Repeat("ab", 32)
	rec := func(extra string) string {
		return `{"version":1,"records":[{"projectRoot":"/p","id":"fs","digest":"` + d + `","actionClass":"read","trustedAt":"2026-01-02T03:04:05Z"` + extra + `}]}`
	}
	cases := []struct {
		name, data string
		ok         bool
		msg        string
	}{
		{"valid", rec(""), true, ""},
		{"valid fields", rec(`,"fields":{"command":"` + d + `"}`), true, ""},
		{"empty records", `{"version":1,"records":[]}`, true, ""},
		{"null records", `{"version":1,"records":null}`, true, ""},
		{"trailing whitespace", rec("") + "\n\n  ", true, ""},
		{"unknown field", rec(`,"x":1`), false, "unknown field"},
		{"wrong version", `{"version":2,"records":[]}`, false, "version 2"},
		{"no version", `{"records":[]}`, false, "version 0"},
		{"trailing data", rec("") + "{}", false, "trailing data"},
		{"not json", "trust me", false, "not valid trust JSON"},
		{"array", "[]", false, "not valid trust JSON"},
		{"empty", "", false, "not valid trust JSON"},
		{"bad digest", strings.Replace(rec(""), d, "abc", 1), false, "digest"},
		{"upper digest", strings.Replace(rec(""), d, strings.ToUpper(d), 1), false, "digest"},
		{"bad id", strings.Replace(rec(""), `"fs"`, `"a__b"`, 1), false, "id"},
		{"underscore id", strings.Replace(rec(""), `"fs"`, `"_"`, 1), false, "id"},
		{"trailing underscore and bad digest", strings.Replace(strings.Replace(rec(""), `"fs"`, `"fx_"`, 1), d, "abc", 1), false, "ends in _"},
		{"relative root", strings.Replace(rec(""), `"/p"`, `"p"`, 1), false, "projectRoot"},
		{"unclean root", strings.Replace(rec(""), `"/p"`, `"/p/../q"`, 1), false, "clean"},
		{"bad class", strings.Replace(rec(""), `"read"`, `"write"`, 1), false, "actionClass"},
		{"bad field digest", rec(`,"fields":{"command":"x"}`), false, "fields"},
		{"duplicate", `{"version":1,"records":[` + strings.TrimSuffix(strings.TrimPrefix(rec(""), `{"version":1,"records":[`), "]}") + "," + strings.TrimSuffix(strings.TrimPrefix(rec(""), `{"version":1,"records":[`), "]}") + `]}`, false, "duplicate"},
		{"at record cap", string(validFile(MaxRecords)), true, ""},
		{"over record cap", string(validFile(MaxRecords + 1)), false, "over the cap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, _, err := Decode([]byte(c.data))
			if c.ok {
				if err != nil || recs == nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %v, want ErrCorrupt containing %q", err, c.msg)
			}
		})
	}
}

func TestReadBounds(t *testing.T) {
	dir := t.TempDir()
	file := FilePath(dir)
	// Missing: empty, no diagnostics, nothing created.
	st := Read(file)
	if len(st.Records) != 0 || len(st.Diagnostics) != 0 {
		t.Fatalf("missing: %+v", st)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatal("Read created the file")
	}
	// Exactly at the byte cap (padding is JSON whitespace): accepted.
	body := validFile(3)
	at := append(append([]byte{}, body...), bytes.Repeat([]byte(" "), MaxFileBytes-len(body))...)
	if err := os.WriteFile(file, at, 0o600); err != nil {
		t.Fatal(err)
	}
	if st := Read(file); len(st.Records) != 3 || len(st.Diagnostics) != 0 {
		t.Fatalf("at cap: %d records %v", len(st.Records), st.Diagnostics)
	}
	// One byte over: empty plus a diagnostic, and the file is untouched.
	over := append(at, ' ')
	cases := map[string][]byte{
		"oversized":      over,
		"over-populated": validFile(MaxRecords + 1),
		"corrupt":        []byte(`{"version":1,"records":[{]}`),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			if err := os.Chtimes(file, old, old); err != nil {
				t.Fatal(err)
			}
			st := Read(file)
			if len(st.Records) != 0 || len(st.Diagnostics) != 1 || st.Diagnostics[0].Fix == "" {
				t.Fatalf("%d records, diagnostics %v", len(st.Records), st.Diagnostics)
			}
			// Writes refuse to replace an unusable file.
			err := Upsert(file, Record{ProjectRoot: dir, ID: "x", Digest: hexDigest("x")})
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("Upsert over unusable file: %v", err)
			}
			if _, err := Remove(file, dir, "x"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Remove over unusable file: %v", err)
			}
			got, _ := os.ReadFile(file)
			fi, _ := os.Stat(file)
			if !bytes.Equal(got, data) || !fi.ModTime().Equal(old) {
				t.Error("the unusable file was rewritten")
			}
			// The resolution says the file could not be read.
			s := Resolve(Decl{Scope: ScopeProject, ProjectRoot: dir, ID: "x", Digest: hexDigest("x")}, st)
			if s.Status != Untrusted || !strings.Contains(s.Reason, "trust file could not be read") {
				t.Errorf("status %+v", s)
			}
		})
	}
}

func TestUpsertRemove(t *testing.T) {
	dir := t.TempDir()
	file := FilePath(filepath.Join(dir, "cfg")) // directory created on demand
	root := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	croot, _ := CanonicalRoot(root)
	if err := Upsert(file, Record{ProjectRoot: link, ID: "fs", Digest: hexDigest("1"), Fields: map[string]string{"command": hexDigest("c")}, Program: "/usr/bin/fs"}); err != nil {
		t.Fatal(err)
	}
	st := Read(file)
	r, ok := st.Find(croot, "fs")
	if !ok || r.ActionClass != "" || r.TrustedAt.IsZero() || r.Fields["command"] != hexDigest("c") {
		t.Fatalf("record %+v (found %v) in %+v", r, ok, st)
	}
	if s := Resolve(Decl{Scope: ScopeProject, ProjectRoot: croot, ID: "fs", Digest: hexDigest("1"), Program: "/usr/bin/fs"}, st); s.Status != Trusted || s.ActionClass != ActionUnknown || s.ClassSet {
		t.Fatalf("a record without a class resolves to unknown, not set: %+v", s)
	}
	// Upsert replaces in place.
	if err := Upsert(file, Record{ProjectRoot: root, ID: "fs", Digest: hexDigest("2"), ActionClass: ActionExecute}); err != nil {
		t.Fatal(err)
	}
	if err := Upsert(file, Record{ProjectRoot: root, ID: "git", Digest: hexDigest("3")}); err != nil {
		t.Fatal(err)
	}
	st = Read(file)
	if r, _ := st.Find(croot, "fs"); len(st.Records) != 2 || r.Digest != hexDigest("2") || r.ActionClass != ActionExecute {
		t.Fatalf("after replace: %+v", st.Records)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	removed, err := Remove(file, link, "fs")
	if err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	removed, err = Remove(file, root, "fs")
	if err != nil || removed {
		t.Fatalf("second remove: %v %v", removed, err)
	}
	if st = Read(file); len(st.Records) != 1 || st.Records[0].ID != "git" {
		t.Fatalf("after remove: %+v", st.Records)
	}
	// Invalid records are refused before touching the file.
	bad := []Record{
		{ProjectRoot: root, ID: "Bad", Digest: hexDigest("1")},
		{ProjectRoot: root, ID: "a__b", Digest: hexDigest("1")},
		{ProjectRoot: root, ID: "ok", Digest: "short"},
		{ProjectRoot: root, ID: "ok", Digest: hexDigest("1"), ActionClass: "write"},
		{ProjectRoot: filepath.Join(dir, "missing"), ID: "ok", Digest: hexDigest("1")},
	}
	for _, b := range bad {
		if err := Upsert(file, b); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("Upsert(%+v) = %v", b, err)
		}
	}
}

func TestUpsertFull(t *testing.T) {
	file := FilePath(t.TempDir())
	root := t.TempDir()
	croot, _ := CanonicalRoot(root)
	recs := make([]Record, MaxRecords)
	for i := range recs {
		recs[i] = Record{ProjectRoot: croot, ID: fmt.Sprintf("s%d", i), Digest: hexDigest("x"), ActionClass: ActionUnknown, TrustedAt: time.Unix(1, 0).UTC()}
	}
	data, _ := Encode(recs)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Upsert(file, Record{ProjectRoot: root, ID: "one-more", Digest: hexDigest("x")}); !errors.Is(err, ErrFull) {
		t.Fatalf("over cap: %v", err)
	}
	if err := Upsert(file, Record{ProjectRoot: root, ID: "s7", Digest: hexDigest("y")}); err != nil {
		t.Fatalf("replace at cap: %v", err)
	}
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	croot, _ := CanonicalRoot(root)
	fields := map[string]string{"command": hexDigest("c"), "args": hexDigest("a"), "env": hexDigest("e")}
	st := &State{Records: []Record{{ProjectRoot: croot, ID: "fs", Digest: hexDigest("d"), Fields: fields, Program: "/usr/bin/fs", ActionClass: ActionRead, TrustedAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}}}
	remedy := "sluice trust fs --project " + croot

	s := Resolve(Decl{Scope: ScopeUser, ID: "fs", ActionClass: ActionExecute}, st)
	if s.Status != Trusted || s.ActionClass != ActionExecute || s.Remedy != "" {
		t.Errorf("user: %+v", s)
	}
	if s := Resolve(Decl{Scope: ScopeUser, ID: "fs"}, nil); s.ActionClass != ActionUnknown {
		t.Errorf("user default class: %+v", s)
	}

	s = Resolve(Decl{Scope: ScopeProject, ProjectRoot: root, ID: "git", Digest: hexDigest("d")}, st)
	if s.Status != Untrusted || s.ActionClass != ActionUnknown || s.Remedy != "sluice trust git --project "+croot || !strings.Contains(s.Reason, "no trust record") {
		t.Errorf("untrusted: %+v", s)
	}

	// Matching digest: trusted with the record's class, whatever the
	// declaration says.
	s = Resolve(Decl{Scope: ScopeProject, ProjectRoot: root, ID: "fs", Digest: hexDigest("d"), ActionClass: ActionExecute, Program: "/usr/bin/fs"}, st)
	if s.Status != Trusted || s.ActionClass != ActionRead {
		t.Errorf("trusted: %+v", s)
	}

	changed := map[string]string{"command": hexDigest("c"), "args": hexDigest("A"), "env": hexDigest("e"), "passEnv": hexDigest("p")}
	s = Resolve(Decl{Scope: ScopeProject, ProjectRoot: root, ID: "fs", Digest: hexDigest("D"), FieldDigests: changed, Program: "/usr/bin/fs"}, st)
	if s.Status != Stale || s.ActionClass != ActionUnknown || s.Remedy != remedy || strings.Join(s.Changed, ",") != "args,passEnv" ||
		!strings.Contains(s.Reason, "(args, passEnv)") || !strings.Contains(s.Reason, "sluice servers --project "+croot) || s.Review != "sluice servers --project "+croot {
		t.Errorf("stale: %+v", s)
	}
	// Without per-field digests the status is still stale, Changed nil.
	s = Resolve(Decl{Scope: ScopeProject, ProjectRoot: root, ID: "fs", Digest: hexDigest("D"), Program: "/usr/bin/fs"}, st)
	if s.Status != Stale || s.Changed != nil {
		t.Errorf("stale without fields: %+v", s)
	}
	// A different root is a different binding.
	other := t.TempDir()
	if s := Resolve(Decl{Scope: ScopeProject, ProjectRoot: other, ID: "fs", Digest: hexDigest("d")}, st); s.Status != Untrusted {
		t.Errorf("other root: %+v", s)
	}
	// A symlink to the root resolves to the same binding.
	link := filepath.Join(t.TempDir(), "l")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if s := Resolve(Decl{Scope: ScopeProject, ProjectRoot: link, ID: "fs", Digest: hexDigest("d"), Program: "/usr/bin/fs"}, st); s.Status != Trusted {
		t.Errorf("via symlink: %+v", s)
	}
	if s := Resolve(Decl{Scope: ScopeProject, ID: "fs"}, st); s.Status != Untrusted {
		t.Errorf("no root: %+v", s)
	}
	if s := Resolve(Decl{Scope: "other", ID: "fs"}, st); s.Status != Untrusted {
		t.Errorf("bad scope: %+v", s)
	}
}

func TestRemedyQuoting(t *testing.T) {
	cases := map[string]string{
		"/plain/path":  "sluice trust fs --project /plain/path",
		"/with space":  "sluice trust fs --project '/with space'",
		"/it's":        `sluice trust fs --project '/it'\''s'`,
		"/x;rm -rf /":  "sluice trust fs --project '/x;rm -rf /'",
		"/a$(touch b)": "sluice trust fs --project '/a$(touch b)'",
	}
	for root, want := range cases {
		if got := RemedyCommand("fs", root); got != want {
			t.Errorf("%q: got %s want %s", root, got, want)
		}
	}
}

// TestResolveProgram: the record binds the program the command resolved
// to; another program behind the same declaration is stale, and so is a
// record that names none.
func TestResolveProgram(t *testing.T) {
	root := t.TempDir()
	croot, _ := CanonicalRoot(root)
	rec := Record{ProjectRoot: croot, ID: "web", Digest: hexDigest("d"), Program: "/usr/bin/node", TrustedAt: time.Unix(0, 0).UTC()}
	decl := Decl{Scope: ScopeProject, ProjectRoot: croot, ID: "web", Digest: hexDigest("d"), Program: "/usr/bin/node"}
	if s := Resolve(decl, &State{Records: []Record{rec}}); s.Status != Trusted {
		t.Fatalf("same program: %+v", s)
	}
	for _, c := range []struct {
		recProg, declProg, reason string
	}{
		{"/usr/bin/node", "/home/u/repo/bin/node", "now runs /home/u/repo/bin/node, not /usr/bin/node"},
		{"/usr/bin/node", "", "no longer resolves to a program (it ran /usr/bin/node)"},
		{"", "/usr/bin/node", "names no program"},
	} {
		r, d := rec, decl
		r.Program, d.Program = c.recProg, c.declProg
		s := Resolve(d, &State{Records: []Record{r}})
		if s.Status != Stale || strings.Join(s.Changed, ",") != "program" || !strings.Contains(s.Reason, c.reason) || s.Remedy == "" {
			t.Errorf("record %q, now %q: %+v", c.recProg, c.declProg, s)
		}
	}
	// Both changed: both are named.
	d := decl
	d.Digest, d.Program = hexDigest("e"), "/opt/node"
	d.FieldDigests = map[string]string{"args": hexDigest("a")}
	r := rec
	r.Fields = map[string]string{"args": hexDigest("b")}
	if s := Resolve(d, &State{Records: []Record{r}}); s.Status != Stale || strings.Join(s.Changed, ",") != "args,program" {
		t.Errorf("both: %+v", s)
	}
	// The program is validated like the rest of a record.
	for _, bad := range []string{"node", "/usr/bin/../bin/node", "/usr/bin/no\x00de"} {
		r := rec
		r.Program = bad
		if err := Upsert(FilePath(t.TempDir()), r); err == nil {
			t.Errorf("program %q accepted", bad)
		}
	}
}

// TestTrailingUnderscoreID: an id ending in "_" is refused on write, and a
// file written by an earlier version that holds one keeps every other
// record in force, says which record is ignored and how to remove it, and
// never loses a record on a later write.
func TestTrailingUnderscoreID(t *testing.T) {
	dir := t.TempDir()
	file := FilePath(dir)
	root := t.TempDir()
	croot, _ := CanonicalRoot(root)

	err := Upsert(file, Record{ProjectRoot: root, ID: "fx_", Digest: hexDigest("1")})
	if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), `"fx_" ends in _`) || !strings.Contains(err.Error(), `"__" separates server and tool`) {
		t.Fatalf("Upsert of fx_ = %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatal("a refused record created the trust file")
	}

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := []Record{
		{ProjectRoot: croot, ID: "fs", Digest: hexDigest("fs"), ActionClass: ActionRead, TrustedAt: at},
		{ProjectRoot: croot, ID: "fx_", Digest: hexDigest("fx"), ActionClass: ActionExecute, TrustedAt: at},
		{ProjectRoot: croot, ID: "git", Digest: hexDigest("git"), TrustedAt: at},
	}
	data, err := Encode(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st := Read(file)
	if len(st.Diagnostics) != 0 || len(st.Records) != 2 || st.Records[0].ID != "fs" || st.Records[1].ID != "git" {
		t.Fatalf("records %+v, diagnostics %v", st.Records, st.Diagnostics)
	}
	if len(st.Warnings) != 1 {
		t.Fatalf("warnings %v", st.Warnings)
	}
	w := st.Warnings[0].String()
	for _, want := range []string{file, "record 1", `server id "fx_" ends in _`, "the other records are in force", "sluice untrust fx_ --project " + shellQuote(croot)} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if _, ok := st.Find(croot, "fx_"); ok {
		t.Error("the ignored record is found")
	}
	if s := Resolve(Decl{Scope: ScopeProject, ProjectRoot: croot, ID: "fs", Digest: hexDigest("fs")}, st); s.Status != Trusted || s.ActionClass != ActionRead {
		t.Errorf("fs: %+v", s)
	}

	// A later write keeps the ignored record byte for byte.
	if err := Upsert(file, Record{ProjectRoot: root, ID: "new", Digest: hexDigest("new"), TrustedAt: at}); err != nil {
		t.Fatal(err)
	}
	recs, ignored, err := Decode(mustRead(t, file))
	if err != nil || len(recs) != 3 || len(ignored) != 1 || !reflect.DeepEqual(ignored[0].Record, old[1]) {
		t.Fatalf("after Upsert: %+v, ignored %+v, %v", recs, ignored, err)
	}
	// Removing another record keeps it too.
	if removed, err := Remove(file, root, "new"); err != nil || !removed {
		t.Fatalf("remove new: %v %v", removed, err)
	}
	if _, ignored, _ := Decode(mustRead(t, file)); len(ignored) != 1 {
		t.Fatalf("after removing new: ignored %+v", ignored)
	}
	// The remedy the warning names removes exactly that record.
	if removed, err := Remove(file, root, "fx_"); err != nil || !removed {
		t.Fatalf("remove fx_: %v %v", removed, err)
	}
	st = Read(file)
	if len(st.Warnings) != 0 || len(st.Diagnostics) != 0 || len(st.Records) != 2 {
		t.Fatalf("after removing fx_: %+v %v %v", st.Records, st.Warnings, st.Diagnostics)
	}
	if !reflect.DeepEqual(st.Records, []Record{old[0], old[2]}) {
		t.Fatalf("the other records changed: %+v", st.Records)
	}
}

// TestIgnoredRecordsCountTowardTheCap: an ignored record still takes a
// place in the file, so the cap holds for what is written.
func TestIgnoredRecordsCountTowardTheCap(t *testing.T) {
	file := FilePath(t.TempDir())
	root := t.TempDir()
	croot, _ := CanonicalRoot(root)
	recs := make([]Record, MaxRecords)
	for i := range recs {
		recs[i] = Record{ProjectRoot: croot, ID: fmt.Sprintf("s%d", i), Digest: hexDigest("x"), TrustedAt: time.Unix(1, 0).UTC()}
	}
	recs[0].ID = "s_"
	data, _ := Encode(recs)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Upsert(file, Record{ProjectRoot: root, ID: "one-more", Digest: hexDigest("x")}); !errors.Is(err, ErrFull) {
		t.Fatalf("over cap: %v", err)
	}
	if got := mustRead(t, file); !bytes.Equal(got, data) {
		t.Fatal("a refused write changed the file")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
