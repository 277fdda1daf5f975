package config

// This file edits a declaration file in place for 'sluice add', 'update',
// 'remove', 'enable', 'disable', 'tools' and 'import --write'. Every one
// of them goes the same way: read the file, splice its text, parse the
// result with the loader's rules, then write it atomically (keeping a
// backup when asked).
//
// # Why splice bytes instead of re-encoding the node tree
//
// yaml.v3 can re-encode a node tree with its comments, but not with the
// author's formatting: blank lines vanish, indentation and quoting are
// normalized, long flow lists are re-wrapped. A file people maintain by
// hand must come back as they wrote it, so the tree is only used to find
// where things are (line and column of each key), and an edit replaces,
// inserts or deletes whole lines of the original text. Everything outside
// the edited entry is byte-for-byte what was there. The result is parsed
// again with the loader's own rules before anything is written, and the
// write is atomic: a refused edit changes nothing.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"sluice/gateway/internal/files"
	"sluice/gateway/internal/linediff"
	"sluice/gateway/proc"
)

// EnvVar is one env entry of a ServerSpec, in the order given.
type EnvVar struct{ Key, Value string }

// ServerSpec is what 'sluice add' declares and 'sluice update' changes.
// For an update, a zero field is left as it is.
type ServerSpec struct {
	Command     string
	Args        []string // add: the arguments; update: nil = unchanged (SetArgs replaces them, even with none)
	SetArgs     bool
	URL         string
	Env         []EnvVar // update: merged into the existing env (a key is replaced)
	Cwd         string
	ActionClass string
}

// Change is an edit of one declaration file, already written.
type Change struct {
	File    string
	Scope   Scope
	Created bool   // the file did not exist before
	Diff    string // the changed lines: "-" removed, "+" added, with their line numbers
	// Warnings are problems that do not stop the edit (a command not on
	// PATH yet, a profile naming the removed server).
	Warnings []Diagnostic
}

// EditTarget names the file an edit applies to.
type EditTarget struct {
	File   string // the mcp.yaml to edit (created when missing)
	Scope  Scope
	Base   string              // as for Parse: the directory relative paths resolve against
	Getenv func(string) string // PATH for the command check; default os.Getenv
	// Backup, when set, is where the file's old bytes are kept before an
	// existing file is replaced (0600, its directory created private). A
	// backup that cannot be written stops the edit.
	Backup string
	// Discovered marks a project file whose root was found by walking up
	// from the working directory: once open, a file another user owns is
	// refused (the caller has checked the path before; this is the look
	// the write relies on).
	Discovered bool
	// Shown, when set, hides literal credentials in the reported diff.
	Shown *ShownMask
}

// read reads the target's current bytes, refusing another user's file
// when the target was discovered.
func (t EditTarget) read() ([]byte, error) {
	var check func(os.FileInfo) error
	if t.Discovered {
		check = func(fi os.FileInfo) error {
			if uid, foreign := openedOwner(fi); foreign {
				return &EditError{File: t.File, Message: ForeignEditMessage(Foreign{Path: t.File, UID: uid}, ForeignEditFix)}
			}
			return nil
		}
	}
	return readFileCapped(t.File, MaxFileBytes, check)
}

// ForeignEditFix is the way out of an edit refused by ForeignEditMessage
// for the commands that take --project-dir.
const ForeignEditFix = "work in a directory of your own, or pass --project-dir DIR with --project to edit that project's file on purpose"

// ForeignEditMessage says why an edit of a discovered project that
// belongs to another user is refused, then fix.
func ForeignEditMessage(f Foreign, fix string) string {
	return fmt.Sprintf("refused, nothing was written: %s belongs to another user, %s, and the project root was found by walking up from the working directory (sluice does not load that project either); %s", f.Path, f.Owner(), fix)
}

// AddServer declares a new server at the end of the servers mapping.
func AddServer(t EditTarget, id string, spec ServerSpec) (*Change, error) {
	return t.edit(func(d *doc) error {
		if _, _, ok := d.server(id); ok {
			return &EditError{File: t.File, Message: fmt.Sprintf("server %s is already declared (line %d); use 'sluice update %s' to change it", id, d.serverKeyLine(id), id)}
		}
		return d.addServer(id, spec)
	}, id)
}

// UpdateServer changes fields of a declared server.
func UpdateServer(t EditTarget, id string, spec ServerSpec) (*Change, error) {
	return t.edit(func(d *doc) error {
		if err := d.need(t.File, id); err != nil {
			return err
		}
		set := func(key string, v valueText) error {
			if err := d.setField(id, key, v); err != nil {
				return err
			}
			return d.reparse()
		}
		if spec.URL != "" && spec.Command != "" {
			return &EditError{File: t.File, Message: "give either a command or --url, not both"}
		}
		if spec.Command != "" {
			if err := d.deleteFields(id, "url", "headers", "transport", "oauth", "allowPrivate"); err != nil {
				return err
			}
			if err := set("command", scalarText(spec.Command)); err != nil {
				return err
			}
		}
		if spec.URL != "" {
			if err := d.deleteFields(id, "command", "args", "cwd", "env", "passEnv", "stdoutNoise", "maxLineBytes"); err != nil {
				return err
			}
			if err := set("url", scalarText(spec.URL)); err != nil {
				return err
			}
		}
		if spec.SetArgs || spec.Args != nil {
			if err := set("args", listText(spec.Args)); err != nil {
				return err
			}
		}
		if spec.Cwd != "" {
			if err := set("cwd", scalarText(spec.Cwd)); err != nil {
				return err
			}
		}
		if spec.ActionClass != "" {
			if err := set("actionClass", scalarText(spec.ActionClass)); err != nil {
				return err
			}
		}
		if len(spec.Env) > 0 {
			env := d.existingEnv(id)
			for _, kv := range spec.Env {
				env = setEnv(env, kv)
			}
			if err := set("env", envText(env)); err != nil {
				return err
			}
		}
		return nil
	}, id)
}

// RemoveServer deletes a server's entry (its comment lines above it go
// with it; everything else stays).
func RemoveServer(t EditTarget, id string) (*Change, error) {
	return t.edit(func(d *doc) error {
		if err := d.need(t.File, id); err != nil {
			return err
		}
		k, _, _ := d.server(id)
		start, end := d.pairSpan(d.servers, k)
		start = d.headCommentStart(k, start)
		// The blank lines after the entry separated it from the next
		// one; they go with it when nothing but a blank line or the
		// servers key is above it, so no double gap is left.
		before := strings.TrimSpace(lastLine(d.src[:start]))
		if before == "" || k == d.servers.Content[0] {
			for end < len(d.src) {
				nl := bytes.IndexByte(d.src[end:], '\n')
				if nl < 0 || strings.TrimSpace(string(d.src[end:end+nl])) != "" {
					break
				}
				end += nl + 1
			}
		}
		d.splice(start, end, nil)
		return nil
	}, "")
}

// SetEnabled sets enabled: false, or removes it (true is the default).
func SetEnabled(t EditTarget, id string, enabled bool) (*Change, error) {
	return t.edit(func(d *doc) error {
		if err := d.need(t.File, id); err != nil {
			return err
		}
		if enabled {
			return d.deleteFields(id, "enabled")
		}
		return d.setField(id, "enabled", valueText{inline: "false"})
	}, id)
}

// SetTools sets a server's tool subset. A nil list leaves that list as it
// is; reset removes the tools block (every tool visible).
func SetTools(t EditTarget, id string, allow, deny []string, reset bool) (*Change, error) {
	return t.edit(func(d *doc) error {
		if err := d.need(t.File, id); err != nil {
			return err
		}
		if reset {
			return d.deleteFields(id, "tools")
		}
		cur := d.currentTools(id)
		if allow != nil {
			cur.Allow = allow
		}
		if deny != nil {
			cur.Deny = deny
		}
		if len(cur.Allow) == 0 && len(cur.Deny) == 0 {
			return d.deleteFields(id, "tools")
		}
		var parts []string
		if len(cur.Allow) > 0 {
			parts = append(parts, "allow: "+listText(cur.Allow).inline)
		}
		if len(cur.Deny) > 0 {
			parts = append(parts, "deny: "+listText(cur.Deny).inline)
		}
		return d.setField(id, "tools", valueText{inline: "{" + strings.Join(parts, ", ") + "}"})
	}, id)
}

// Edit is an edit of one declaration file worked out but not written:
// the file's bytes as read and as they would be.
type Edit struct {
	Target  EditTarget
	Before  []byte
	After   []byte
	Created bool // the file does not exist yet

	servers []Server     // what After declares
	diags   []Diagnostic // After's diagnostics
}

// Changed reports whether writing the edit would change anything.
func (e *Edit) Changed() bool { return e.Created || !bytes.Equal(e.Before, e.After) }

// AppendServers works out the edit that adds the server entries render
// writes to the end of the target's servers mapping (created when
// absent); every other byte stays as it was. render gets the indentation
// of a server key and the step from a key to its fields, as the file
// already uses them. The edit is refused when the file would get an
// error it did not have. With ids, it is refused too unless the servers
// it adds are exactly those: rendered text that declares another server
// (a value or comment that ends its line early) is never written. Only
// the set of server ids is compared: a field or top-level key smuggled
// in the same way is kept out by render's own escaping (the comments and
// values gateway/clients writes), not by this check. Nothing is written:
// see Write.
func AppendServers(t EditTarget, render func(indent, step string) string, ids ...string) (*Edit, error) {
	return t.plan(func(d *doc) error {
		before, count := d.serverIDs(), d.serverCount()
		srv, step := d.indents()
		if err := d.appendEntries([]byte(render(strings.Repeat(" ", srv), strings.Repeat(" ", step)))); err != nil {
			return err
		}
		if ids == nil {
			return nil
		}
		var added []string
		for id := range d.serverIDs() {
			if !before[id] {
				added = append(added, id)
			}
		}
		want := append([]string(nil), ids...)
		sort.Strings(added)
		sort.Strings(want)
		if strings.Join(added, "\x00") != strings.Join(want, "\x00") || d.serverCount() != count+len(want) {
			return &EditError{File: d.file, Message: fmt.Sprintf("internal: the declarations to add would declare servers %q, not %q; nothing was written", added, want)}
		}
		return nil
	})
}

// serverCount is the number of entries of the servers mapping (a key
// written twice counts twice).
func (d *doc) serverCount() int {
	if d.servers == nil {
		return 0
	}
	return len(d.servers.Content) / 2
}

// serverIDs is the set of keys of the servers mapping.
func (d *doc) serverIDs() map[string]bool {
	out := map[string]bool{}
	if d.servers == nil {
		return out
	}
	for i := 0; i+1 < len(d.servers.Content); i += 2 {
		out[d.servers.Content[i].Value] = true
	}
	return out
}

// edit works out fn's edit, checks the command of server checkID ("" =
// none) like a launch would, and writes it.
func (t EditTarget) edit(fn func(*doc) error, checkID string) (*Change, error) {
	e, err := t.plan(fn)
	if err != nil {
		return nil, err
	}
	if !e.Changed() {
		return &Change{File: t.File, Scope: t.Scope}, nil
	}
	var mask func(string) string
	if t.Shown != nil {
		mask = t.Shown.lineMask(t, e.Before, e.After)
	}
	ch := &Change{File: t.File, Scope: t.Scope, Created: e.Created, Diff: linediff.Changed(e.Before, e.After, mask)}
	if checkID != "" {
		warn, err := e.checkProgram(checkID)
		if err != nil {
			return nil, err
		}
		ch.Warnings = warn
	}
	if err := e.Write(); err != nil {
		return nil, err
	}
	return ch, nil
}

// plan reads the target, applies fn to its text and validates the result
// like Load: an edit that adds an error, or makes the file too large, is
// refused.
func (t EditTarget) plan(fn func(*doc) error) (*Edit, error) {
	if t.Scope != ScopeUser && t.Scope != ScopeProject {
		return nil, fmt.Errorf("config: internal: unknown scope %q", t.Scope)
	}
	src, err := t.read()
	created := false
	base := t.Base
	var ee *EditError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		src, created = nil, true
		// The first declaration on a machine: the config directory may
		// not exist yet (Write makes it, private). The new file's cwd
		// checks resolve against an empty private directory standing for
		// it, so a preview creates nothing and no cwd fails to resolve.
		if t.Scope == ScopeUser && t.Base != "" {
			if _, serr := os.Lstat(t.Base); errors.Is(serr, fs.ErrNotExist) {
				stand, merr := os.MkdirTemp("", "sluice-config-")
				if merr != nil {
					return nil, &EditError{File: t.File, Message: "cannot check it against its directory to be: " + merr.Error(), Err: merr}
				}
				defer os.RemoveAll(stand)
				base = stand
			}
		}
	case errors.As(err, &ee):
		return nil, ee
	case err != nil:
		return nil, &EditError{File: t.File, Message: "cannot read it: " + err.Error(), Err: err}
	}
	_, _, beforeDiags := Parse(src, t.File, t.Scope, base)
	if fatal := fileFatal(src, beforeDiags); fatal != nil {
		return nil, &EditError{File: t.File, Message: "the file cannot be edited safely as it is; fix it first", Diagnostics: []Diagnostic{*fatal}}
	}
	d, err := newDoc(t.File, src)
	if err != nil {
		return nil, err
	}
	if err := fn(d); err != nil {
		return nil, err
	}
	e := &Edit{Target: t, Before: src, After: d.src, Created: created}
	if !e.Changed() {
		return e, nil
	}
	if len(e.After) > MaxFileBytes {
		return nil, &EditError{File: t.File, Message: fmt.Sprintf("the change is refused: the file would be larger than %d KiB, the most sluice reads", MaxFileBytes>>10)}
	}
	servers, _, afterDiags := Parse(e.After, t.File, t.Scope, base)
	if added := newErrors(beforeDiags, afterDiags); len(added) > 0 {
		return nil, &EditError{File: t.File, Message: "the change is refused: the file would not load as intended", Diagnostics: added}
	}
	e.servers, e.diags = servers, afterDiags
	return e, nil
}

// checkProgram checks the command of server id in the edited file: not
// on PATH is a warning (it may be installed later), a program that is
// not allowed refuses the edit.
func (e *Edit) checkProgram(id string) ([]Diagnostic, error) {
	t := e.Target
	getenv := t.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, s := range e.servers {
		if s.ID != id {
			continue
		}
		if s.CLI != nil || s.URL != "" || s.Command == "" {
			return nil, nil
		}
		prog := ResolveProgram(s.Command, getenv("PATH"))
		if prog == "" {
			return []Diagnostic{{Severity: SeverityWarning, File: t.File, Line: s.Line, Column: s.Column,
				Field: joinField(serverField(s.ID), "command"), Message: fmt.Sprintf("command %q is not found on PATH; launching fails until it is installed", s.Command),
				Fix: "install the program or give its absolute path"}}, nil
		}
		if why := CheckProgram(s.Scope, prog, s.Args); why != "" {
			return nil, &EditError{File: t.File, Message: "the change is refused: " + why + ", which is not allowed"}
		}
		return nil, nil
	}
	// The declaration has an error the edit did not fix (a relative
	// command, a bad env key): it does not load, before or after.
	var errs []Diagnostic
	for _, d := range e.diags {
		if d.Severity == SeverityError && (d.Field == serverField(id) || strings.HasPrefix(d.Field, serverField(id)+".")) {
			errs = append(errs, d)
		}
	}
	if len(errs) > 0 {
		return nil, &EditError{File: t.File, Message: fmt.Sprintf("the change is refused: server %s would still not load, its declaration has an error this change does not fix; fix it first (a command with 'sluice update %s -- COMMAND [ARGS...]', anything else in the file)", id, id), Diagnostics: errs}
	}
	return nil, &EditError{File: t.File, Message: fmt.Sprintf("internal: server %s is not in the edited file", id)}
}

// Write writes the edit atomically: a user file and its directory are
// created private, a project file world-readable; an existing file keeps
// its mode. With a Backup path the old bytes are kept there first. It is
// refused, and nothing is written, when the file changed since the edit
// was worked out.
func (e *Edit) Write() error {
	t := e.Target
	if !e.Changed() {
		return nil
	}
	now, err := t.read()
	var ee *EditError
	switch {
	case errors.As(err, &ee):
		return ee
	case errors.Is(err, fs.ErrNotExist) && e.Created:
	case err == nil && !e.Created && bytes.Equal(now, e.Before):
	default:
		return &EditError{File: t.File, Message: "the file changed while the edit was prepared, so nothing was written; run the command again"}
	}
	if t.Backup != "" && !e.Created {
		if err := proc.MkdirPrivate(filepath.Dir(t.Backup)); err != nil {
			return &EditError{File: t.File, Message: "cannot create the backup directory, so nothing was written: " + err.Error(), Err: err}
		}
		if err := files.WriteAtomic(t.Backup, e.Before, 0o600); err != nil {
			return &EditError{File: t.File, Message: "cannot keep a backup, so nothing was written: " + err.Error(), Err: err}
		}
	}
	if e.Created {
		dir := filepath.Dir(t.File)
		if t.Scope == ScopeUser {
			err = proc.MkdirPrivate(dir)
		} else {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			return &EditError{File: t.File, Message: "cannot create its directory: " + err.Error(), Err: err}
		}
		if t.Discovered {
			// The loader looked before the directory existed; another user
			// may have made it since (or it is a link to theirs).
			if fi, err := os.Lstat(dir); err == nil {
				if uid, foreign := openedOwner(fi); foreign {
					return &EditError{File: t.File, Message: ForeignEditMessage(Foreign{Path: dir, UID: uid}, ForeignEditFix)}
				}
			}
		}
	}
	perm := os.FileMode(0o600)
	if st, err := os.Stat(t.File); err == nil {
		perm = st.Mode().Perm()
	} else if t.Scope == ScopeProject {
		perm = 0o644
	}
	if err := files.WriteAtomic(t.File, e.After, perm); err != nil {
		return &EditError{File: t.File, Message: "cannot write it: " + err.Error(), Err: err}
	}
	return nil
}

// fileFatal returns the diagnostic that makes the whole file contribute
// nothing (syntax, several documents, not a mapping ...), or nil.
func fileFatal(src []byte, ds []Diagnostic) *Diagnostic {
	for i, d := range ds {
		if d.Severity == SeverityError && strings.Contains(d.Message, "contributes nothing") {
			return &ds[i]
		}
	}
	return nil
}

// newErrors lists the errors of after that before did not have (compared
// by field and message: line numbers move when lines are inserted).
func newErrors(before, after []Diagnostic) []Diagnostic {
	seen := map[string]int{}
	for _, d := range before {
		if d.Severity == SeverityError {
			seen[d.Field+"\x00"+d.Message]++
		}
	}
	var out []Diagnostic
	for _, d := range after {
		if d.Severity != SeverityError {
			continue
		}
		k := d.Field + "\x00" + d.Message
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		out = append(out, d)
	}
	return out
}

// doc is a file's text and where its servers are.
type doc struct {
	file    string
	src     []byte
	root    *yaml.Node // top-level mapping, nil for an empty file
	servers *yaml.Node // the servers mapping, nil when absent or null
	srvKey  *yaml.Node // the "servers" key, nil when absent
}

func newDoc(file string, src []byte) (*doc, error) {
	d := &doc{file: file, src: src}
	return d, d.reparse()
}

func (d *doc) reparse() error {
	d.root, d.servers, d.srvKey = nil, nil, nil
	var n yaml.Node
	if err := yaml.Unmarshal(d.src, &n); err != nil {
		return &EditError{File: d.file, Message: "internal: the edited text does not parse: " + err.Error()}
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 && n.Content[0].Kind == yaml.MappingNode {
		d.root = n.Content[0]
	}
	if d.root == nil {
		return nil
	}
	if d.root.Style&yaml.FlowStyle != 0 {
		return &EditError{File: d.file, Message: "the top level is written in flow style ({...}); sluice edits block-style files only: edit it by hand"}
	}
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		if d.root.Content[i].Value == "servers" {
			d.srvKey = d.root.Content[i]
			if v := d.root.Content[i+1]; v.Kind == yaml.MappingNode {
				if v.Style&yaml.FlowStyle != 0 && len(v.Content) > 0 {
					return &EditError{File: d.file, Message: "servers is written in flow style ({...}); sluice edits block-style declarations only: edit it by hand"}
				}
				d.servers = v
			}
		}
	}
	return nil
}

func (d *doc) server(id string) (k, v *yaml.Node, ok bool) {
	if d.servers == nil {
		return nil, nil, false
	}
	for i := 0; i+1 < len(d.servers.Content); i += 2 {
		if d.servers.Content[i].Value == id {
			return d.servers.Content[i], d.servers.Content[i+1], true
		}
	}
	return nil, nil, false
}

func (d *doc) serverKeyLine(id string) int {
	k, _, _ := d.server(id)
	return k.Line
}

func (d *doc) need(file, id string) error {
	if _, _, ok := d.server(id); !ok {
		return fmt.Errorf("%w: no server %s in %s", ErrServerNotFound, id, file)
	}
	return nil
}

// lineStart is the byte offset of line n (1-based); past the end it is
// len(src).
func (d *doc) lineStart(n int) int {
	if n <= 1 {
		return 0
	}
	line := 1
	for i, c := range d.src {
		if c == '\n' {
			line++
			if line == n {
				return i + 1
			}
		}
	}
	return len(d.src)
}

func (d *doc) lines() []string {
	s := string(d.src)
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func indentOf(line string) int {
	return len(line) - len(strings.TrimLeft(line, " "))
}

// pairSpan is the byte range of one mapping entry of m: from the start of
// its key's line to the start of the line after its last line (its value,
// and comment lines indented deeper than the key).
func (d *doc) pairSpan(m, k *yaml.Node) (int, int) {
	var v *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i] == k {
			v = m.Content[i+1]
		}
	}
	ls := d.lines()
	indent := k.Column - 1
	last := k.Line
	for ln := k.Line + 1; ln <= len(ls); ln++ {
		text := ls[ln-1]
		trimmed := strings.TrimSpace(text)
		if trimmed == "" {
			continue
		}
		in := indentOf(text)
		if in > indent || (in == indent && v != nil && v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && strings.HasPrefix(trimmed, "-")) {
			last = ln
			continue
		}
		break
	}
	return d.lineStart(k.Line), d.lineStart(last + 1)
}

// headCommentStart extends start upwards over the comment lines directly
// above key k that are indented like it (its head comment).
func (d *doc) headCommentStart(k *yaml.Node, start int) int {
	if k.HeadComment == "" {
		return start
	}
	ls := d.lines()
	first := k.Line
	for ln := k.Line - 1; ln >= 1; ln-- {
		t := ls[ln-1]
		if strings.HasPrefix(strings.TrimSpace(t), "#") && indentOf(t) == k.Column-1 {
			first = ln
			continue
		}
		break
	}
	return d.lineStart(first)
}

// splice replaces src[start:end] with text (whole lines, each ending in a
// newline).
func (d *doc) splice(start, end int, text []byte) {
	out := make([]byte, 0, len(d.src)-(end-start)+len(text))
	out = append(out, d.src[:start]...)
	out = append(out, text...)
	out = append(out, d.src[end:]...)
	d.src = out
}

// ensureNewline makes the text end with a newline (so appended lines start
// on their own line) and returns the offset after it.
func (d *doc) ensureNewline() int {
	if len(d.src) > 0 && d.src[len(d.src)-1] != '\n' {
		d.src = append(d.src, '\n')
	}
	return len(d.src)
}

// indents returns the indentation of server keys and the step from a
// server key to its fields, from the file (defaults: 2 and 2).
func (d *doc) indents() (srv, step int) {
	srv, step = 2, 2
	if d.servers == nil || len(d.servers.Content) == 0 {
		if d.srvKey != nil {
			srv += d.srvKey.Column - 1
		}
		return
	}
	srv = d.servers.Content[0].Column - 1
	for i := 1; i < len(d.servers.Content); i += 2 {
		v := d.servers.Content[i]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if s := v.Content[0].Column - 1 - srv; s > 0 {
				step = s
			}
			return
		}
	}
	return
}

// valueText is a rendered value: inline (on the key's line) or block
// lines (each without the indentation of the entry, indented one step).
type valueText struct {
	inline string
	block  []string // key:\n  line...
}

func (v valueText) lines(key string, indent, step int) []string {
	pad := strings.Repeat(" ", indent)
	if v.block == nil {
		return []string{pad + key + ": " + v.inline}
	}
	out := []string{pad + key + ":"}
	for _, l := range v.block {
		out = append(out, pad+strings.Repeat(" ", step)+l)
	}
	return out
}

var plainRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./@+=~-][A-Za-z0-9_./@+=~:-]*$`) })

// scalar renders a string as a YAML scalar: plain when that reads back as
// the same string, else double-quoted (JSON escapes are YAML escapes).
func scalar(s string) string {
	if plainRe().MatchString(s) && !strings.HasSuffix(s, ":") {
		var m map[string]any
		if yaml.Unmarshal([]byte("v: "+s), &m) == nil {
			if str, ok := m["v"].(string); ok && str == s {
				return s
			}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func scalarText(s string) valueText { return valueText{inline: scalar(s)} }

func listText(items []string) valueText {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = scalar(s)
	}
	return valueText{inline: "[" + strings.Join(q, ", ") + "]"}
}

func envText(env []EnvVar) valueText {
	if len(env) == 0 {
		return valueText{inline: "{}"}
	}
	var b []string
	for _, kv := range env {
		b = append(b, scalar(kv.Key)+": "+scalar(kv.Value))
	}
	return valueText{block: b}
}

func setEnv(env []EnvVar, kv EnvVar) []EnvVar {
	for i := range env {
		if env[i].Key == kv.Key {
			env[i].Value = kv.Value
			return env
		}
	}
	return append(env, kv)
}

// field finds key in server id's mapping.
func (d *doc) field(id, key string) (m, k, v *yaml.Node) {
	_, sv, ok := d.server(id)
	if !ok || sv.Kind != yaml.MappingNode {
		return sv, nil, nil
	}
	for i := 0; i+1 < len(sv.Content); i += 2 {
		if sv.Content[i].Value == key {
			return sv, sv.Content[i], sv.Content[i+1]
		}
	}
	return sv, nil, nil
}

func (d *doc) existingEnv(id string) []EnvVar {
	_, _, v := d.field(id, "env")
	var out []EnvVar
	if v != nil && v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			out = append(out, EnvVar{v.Content[i].Value, v.Content[i+1].Value})
		}
	}
	return out
}

func (d *doc) currentTools(id string) ToolSubset {
	_, _, v := d.field(id, "tools")
	var t ToolSubset
	if v == nil || v.Kind != yaml.MappingNode {
		return t
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		var list []string
		for _, n := range v.Content[i+1].Content {
			list = append(list, n.Value)
		}
		switch v.Content[i].Value {
		case "allow":
			t.Allow = list
		case "deny":
			t.Deny = list
		}
	}
	return t
}

// setField replaces key's entry in server id (keeping its line comment)
// or appends it after the server's last line.
func (d *doc) setField(id, key string, val valueText) error {
	sv, k, v := d.field(id, key)
	if sv == nil || sv.Kind != yaml.MappingNode || (sv.Style&yaml.FlowStyle != 0 && len(sv.Content) > 0) {
		return &EditError{File: d.file, Message: fmt.Sprintf("server %s is not a block mapping; edit it by hand", id)}
	}
	_, step := d.indents()
	sk, _, _ := d.server(id)
	indent := sk.Column - 1 + step
	if len(sv.Content) > 0 {
		indent = sv.Content[0].Column - 1
	}
	lines := val.lines(key, indent, step)
	if k != nil {
		start, end := d.pairSpan(sv, k)
		comment := k.LineComment
		if comment == "" && v != nil {
			comment = v.LineComment
		}
		if comment != "" && len(lines) > 0 {
			lines[0] += " " + comment
		}
		d.splice(start, end, []byte(strings.Join(lines, "\n")+"\n"))
		return nil
	}
	// Append after the server's entry.
	_, end := d.pairSpan(d.servers, sk)
	if end == len(d.src) {
		end = d.ensureNewline()
	}
	if len(sv.Content) == 0 && sv.Style&yaml.FlowStyle != 0 {
		// "id: {}": rewrite the key line as a block mapping.
		start, end := d.pairSpan(d.servers, sk)
		pad := strings.Repeat(" ", sk.Column-1)
		d.splice(start, end, []byte(pad+scalar(id)+":\n"+strings.Join(lines, "\n")+"\n"))
		return nil
	}
	d.splice(end, end, []byte(strings.Join(lines, "\n")+"\n"))
	return nil
}

// deleteFields removes the entries of keys from server id, one by one.
func (d *doc) deleteFields(id string, keys ...string) error {
	for _, key := range keys {
		sv, k, _ := d.field(id, key)
		if k == nil {
			continue
		}
		if sv.Style&yaml.FlowStyle != 0 {
			return &EditError{File: d.file, Message: fmt.Sprintf("server %s is written in flow style; edit it by hand", id)}
		}
		start, end := d.pairSpan(sv, k)
		d.splice(start, end, nil)
		if err := d.reparse(); err != nil {
			return err
		}
	}
	return nil
}

// addServer appends a server entry at the end of the servers mapping,
// creating the mapping when needed.
func (d *doc) addServer(id string, spec ServerSpec) error {
	srv, step := d.indents()
	var lines []string
	pad := strings.Repeat(" ", srv)
	lines = append(lines, pad+scalar(id)+":")
	field := srv + step
	add := func(key string, v valueText) { lines = append(lines, v.lines(key, field, step)...) }
	if spec.URL != "" {
		add("url", scalarText(spec.URL))
	} else {
		add("command", scalarText(spec.Command))
		if len(spec.Args) > 0 {
			add("args", listText(spec.Args))
		}
		if spec.Cwd != "" {
			add("cwd", scalarText(spec.Cwd))
		}
		if len(spec.Env) > 0 {
			var env []EnvVar
			for _, kv := range spec.Env {
				env = setEnv(env, kv)
			}
			add("env", envText(env))
		}
	}
	if spec.ActionClass != "" {
		add("actionClass", scalarText(spec.ActionClass))
	}
	return d.appendEntries([]byte(strings.Join(lines, "\n") + "\n"))
}

// appendEntries adds text (whole server entries, already indented) at the
// end of the servers mapping: after the last line of its last entry, or
// below the servers key when it has none (an inline "{}" or "null" there
// is dropped, its line comment kept), or as a new servers mapping at the
// end of the file.
func (d *doc) appendEntries(text []byte) error {
	switch {
	case d.servers != nil && len(d.servers.Content) > 0:
		lastKey := d.servers.Content[len(d.servers.Content)-2]
		_, end := d.pairSpan(d.servers, lastKey)
		if end == len(d.src) {
			end = d.ensureNewline()
		}
		d.splice(end, end, text)
	case d.srvKey != nil:
		v := d.srvValue()
		if v.Kind != yaml.MappingNode && !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
			return &EditError{File: d.file, Message: fmt.Sprintf("servers (line %d) is not a mapping of servers; fix it by hand first", d.srvKey.Line)}
		}
		start, end := d.pairSpan(d.root, d.srvKey)
		if end == len(d.src) {
			end = d.ensureNewline()
		}
		if v.Line == d.srvKey.Line && (v.Kind == yaml.MappingNode || v.Value != "") {
			// "servers: {}" or "servers: null": the entries cannot go
			// below that, so the value leaves the key's line.
			lineEnd := start + bytes.IndexByte(d.src[start:], '\n')
			line, eol := string(d.src[start:lineEnd]), "\n"
			if strings.HasSuffix(line, "\r") {
				line, eol = line[:len(line)-1], "\r\n"
			}
			key, rest := strings.TrimRight(line[:v.Column-1], " \t"), line[v.Column-1:]
			if v.Kind == yaml.MappingNode {
				rest = rest[strings.IndexByte(rest, '}')+1:]
			} else {
				rest = rest[len(v.Value):]
			}
			if rest = strings.TrimSpace(rest); rest != "" {
				key += " " + rest
			}
			d.splice(start, lineEnd+1, []byte(key+eol))
			end += len(key) + len(eol) - (lineEnd + 1 - start)
		}
		d.splice(end, end, text)
	default:
		end := d.ensureNewline()
		d.splice(end, end, append([]byte("servers:\n"), text...))
	}
	return d.reparse()
}

// srvValue is the value of the servers key (srvKey must be set).
func (d *doc) srvValue() *yaml.Node {
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		if d.root.Content[i] == d.srvKey {
			return d.root.Content[i+1]
		}
	}
	return nil
}

// lastLine is the last complete line of b (without its newline).
func lastLine(b []byte) string {
	s := strings.TrimSuffix(string(b), "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ProfilesNaming lists the profiles whose servers list names id.
func (s Settings) ProfilesNaming(id string) []string {
	var out []string
	for name, p := range s.Profiles {
		for _, sid := range p.Servers {
			if sid == id {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}
