package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"sluice/gateway/internal/suggest"
	"sluice/gateway/proc"
)

// Fix texts used in several places.
const (
	fixActionClass = "remove actionClass here; record the class with `sluice trust <id> --action-class CLASS`"
	msgActionClass = "only allowed in user config; use the project trust record"
)

var topLevelKeys = []string{"servers", "approve", "idleTimeoutMs", "sandbox", "filters", "results", "profiles", "expose"}

var serverKeys = []string{"command", "args", "cwd", "env", "passEnv", "timeoutMs", "actionClass", "stdoutNoise", "maxLineBytes", "cli",
	"url", "headers", "transport", "oauth", "allowPrivate", "onToolChange", "tools", "enabled", "expose"}

// sharedServerKeys apply to local and remote servers alike.
var sharedServerKeys = []string{"timeoutMs", "actionClass", "onToolChange", "tools", "enabled", "expose"}

// parser collects diagnostics for one file.
type parser struct {
	file   string
	scope  Scope
	base   string
	diags  []Diagnostic
	errors int
	// dirs remembers resolved working directories: most servers of a
	// file share one (the base directory), resolved once per parse.
	dirs map[[2]string]dirInfo
}

// dirInfo is what the file system said about one cwd under one root.
type dirInfo struct {
	resolved string
	exists   bool
	err      error // Contain's
	croot    string
	crootErr error
	notDir   bool // exists, and is not a directory
}

// dir resolves dir under root once per parse.
func (p *parser) dir(root, dir string) dirInfo {
	key := [2]string{root, dir}
	if d, ok := p.dirs[key]; ok {
		return d
	}
	var d dirInfo
	d.resolved, d.exists, d.err = Contain(root, dir)
	if d.err == nil {
		d.croot, d.crootErr = CanonicalDir(root)
		if d.crootErr == nil && d.exists {
			if st, err := os.Stat(d.resolved); err == nil && !st.IsDir() {
				d.notDir = true
			}
		}
	}
	if p.dirs == nil {
		p.dirs = map[[2]string]dirInfo{}
	}
	p.dirs[key] = d
	return d
}

func (p *parser) add(sev Severity, n *yaml.Node, field, msg, fix string) {
	d := Diagnostic{Severity: sev, File: p.file, Field: field, Message: msg, Fix: fix}
	if n != nil {
		d.Line, d.Column = n.Line, n.Column
	}
	if sev == SeverityError {
		p.errors++
	}
	p.diags = append(p.diags, d)
}

func (p *parser) errf(n *yaml.Node, field, fix, format string, args ...any) {
	p.add(SeverityError, n, field, fmt.Sprintf(format, args...), fix)
}

func (p *parser) warnf(n *yaml.Node, field, fix, format string, args ...any) {
	p.add(SeverityWarning, n, field, fmt.Sprintf(format, args...), fix)
}

// Parse validates one mcp.yaml. file names it in diagnostics; base is the
// directory relative paths are resolved against (the project root in
// project scope, the config dir in user scope). A file that is oversized,
// not YAML, not a single mapping document, or that panics the decoder
// contributes nothing. A bad server drops only that server; a bad setting
// drops only that setting (and is listed in Settings.Invalid).
func Parse(data []byte, file string, scope Scope, base string) (servers []Server, settings Settings, diags []Diagnostic) {
	p := &parser{file: file, scope: scope, base: base}
	defer func() {
		if r := recover(); r != nil {
			servers, settings = nil, Settings{}
			p.errf(nil, "", "simplify the file; please report this input", "the YAML decoder failed on this file; it contributes nothing")
			diags = p.diags
		}
	}()
	if scope != ScopeUser && scope != ScopeProject {
		p.errf(nil, "", "", "internal: unknown scope %q", scope)
		return nil, Settings{}, p.diags
	}
	if len(data) > MaxFileBytes {
		p.errf(nil, "", fmt.Sprintf("keep the file at most %d bytes", MaxFileBytes), "file is %d bytes, over the %d-byte cap; it contributes nothing", len(data), MaxFileBytes)
		return nil, Settings{}, p.diags
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line := bytes.Count(data[:i], []byte{'\n'}) + 1
		p.add(SeverityError, &yaml.Node{Line: line}, "", "file contains a NUL byte; it contributes nothing", "remove the NUL byte")
		return nil, Settings{}, p.diags
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return []Server{}, Settings{}, p.diags
		}
		p.syntax(err, data)
		return nil, Settings{}, p.diags
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			p.syntax(err, data)
		} else {
			p.errf(&extra, "", "keep a single YAML document (remove the extra ---)", "file holds more than one YAML document; it contributes nothing")
		}
		return nil, Settings{}, p.diags
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return []Server{}, Settings{}, p.diags
		}
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return []Server{}, Settings{}, p.diags
	}
	if root.Kind != yaml.MappingNode {
		p.errf(root, "", "the file must be a mapping with a `servers:` key", "top level is %s, not a mapping; the file contributes nothing", kindOf(root))
		return nil, Settings{}, p.diags
	}
	pairs, dup := p.pairs(root, "")
	servers = []Server{}
	for _, kv := range pairs {
		if dup[kv.key] {
			continue
		}
		switch kv.key {
		case "servers":
			servers = p.servers(kv.v)
			continue
		case "approve", "idleTimeoutMs", "sandbox", "filters", "results", "profiles", "expose":
			if scope == ScopeProject {
				p.errf(kv.k, kv.key, "move it to the user config (<config dir>/mcp.yaml)", "%s is only allowed in user config", kv.key)
				continue
			}
			before := p.errors
			p.setting(&settings, kv)
			if p.errors > before {
				settings.Invalid = append(settings.Invalid, kv.key)
			}
		default:
			p.unknown(kv.k, "", kv.key, topLevelKeys)
		}
	}
	return servers, settings, p.diags
}

var yamlLineRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): `) })

// yamlParserProblems are the problems the YAML library's parser (not its
// scanner) reports. The library gives a parser error's line 0-based (and
// a scanner error's 1-based), and no column for either.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}

// syntax reports a YAML syntax error at file:line:col: the line the
// library names (made 1-based), and the column where the line shows the
// cause (a tab, a character no token starts with), else no column.
func (p *parser) syntax(err error, data []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1 // the library names no line for the first one
	if m := yamlLineRe().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if slices.Contains(yamlParserProblems, msg) {
			line++ // 0-based
		}
	}
	fix := "fix the YAML syntax"
	switch msg {
	case "did not find expected key", "did not find expected '-' indicator":
		fix = "the block that starts on this line has a line below it indented differently from its other entries; indent its keys (or - items) alike, with spaces"
	case "did not find expected ',' or ']'":
		fix = "close the [ list that starts on this line with ], or quote a value that holds , [ ] { or }"
	case "did not find expected ',' or '}'":
		fix = "close the { mapping that starts on this line with }, or quote a value that holds , [ ] { or }"
	case "found unexpected end of stream":
		fix = "close the quoted string that starts on this line"
	case "mapping values are not allowed in this context":
		fix = "quote the value on this line: it holds \": \" (or put the key on a line of its own)"
	}
	n := &yaml.Node{Line: line}
	if text, ok := lineOf(data, line); ok {
		switch {
		case strings.Contains(msg, "tab character") || strings.Contains(msg, "cannot start any token") && strings.Contains(text, "\t"):
			if i := strings.IndexByte(text, '\t'); i >= 0 {
				n.Column = utf8.RuneCountInString(text[:i]) + 1
				fix = "indent with spaces: YAML does not allow tabs in indentation"
			}
		case strings.Contains(msg, "cannot start any token"):
			if i := strings.IndexAny(text, "@`"); i >= 0 {
				n.Column = utf8.RuneCountInString(text[:i]) + 1
				fix = "quote the value: a plain YAML value cannot start with @ or `"
			}
		}
	}
	p.add(SeverityError, n, "", "YAML syntax error: "+msg+"; the file contributes nothing", fix)
}

// lineOf is line n (1-based) of data, without its line break.
func lineOf(data []byte, n int) (string, bool) {
	if n < 1 {
		return "", false
	}
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return "", false
		}
		data = data[j+1:]
	}
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = data[:j]
	}
	return strings.TrimSuffix(string(data), "\r"), true
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		default:
			return "a " + strings.TrimLeft(n.Tag, "!") + " value"
		}
	}
	return "an unknown node"
}

func (p *parser) unknown(k *yaml.Node, prefix, key string, known []string) {
	field := joinField(prefix, key)
	fix := "remove it; known fields: " + strings.Join(known, ", ")
	if s := suggest.Closest(key, known); s != "" {
		fix = fmt.Sprintf("did you mean %q? known fields: %s", s, strings.Join(known, ", "))
	}
	p.errf(k, field, fix, "unknown field %q", key)
}

func joinField(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

type kv struct {
	key  string
	k, v *yaml.Node
}

// pairs returns the key/value pairs of a mapping. Non-scalar keys, aliases
// and duplicate keys are diagnostics; a duplicated key is reported in dup
// and its every occurrence must be ignored by the caller.
func (p *parser) pairs(n *yaml.Node, field string) ([]kv, map[string]bool) {
	out := make([]kv, 0, len(n.Content)/2)
	seen := map[string]*yaml.Node{}
	dup := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" {
			p.errf(k, field, "use plain string keys", "mapping key is %s, not a string", kindOf(k))
			continue
		}
		if k.Tag == "!!merge" || k.Value == "<<" && k.Style == 0 {
			p.errf(k, field, "write the fields out; YAML merge keys are not supported", "merge key << is not supported")
			continue
		}
		if prev, ok := seen[k.Value]; ok {
			p.errf(k, joinField(field, k.Value), "keep one occurrence", "duplicate key %q (first at line %d)", k.Value, prev.Line)
			dup[k.Value] = true
			continue
		}
		seen[k.Value] = k
		out = append(out, kv{key: k.Value, k: k, v: v})
	}
	return out, dup
}

// mapping checks that n is a mapping and returns its pairs.
func (p *parser) mapping(n *yaml.Node, field string) ([]kv, map[string]bool, bool) {
	if n.Kind == yaml.AliasNode {
		p.errf(n, field, "write the value out; YAML aliases are not supported", "alias *%s is not supported", n.Value)
		return nil, nil, false
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n, field, "write a mapping (key: value lines)", "must be a mapping, got %s", kindOf(n))
		return nil, nil, false
	}
	pr, dup := p.pairs(n, field)
	return pr, dup, true
}

// sequence checks that n is a sequence.
func (p *parser) sequence(n *yaml.Node, field string) ([]*yaml.Node, bool) {
	if n.Kind == yaml.AliasNode {
		p.errf(n, field, "write the value out; YAML aliases are not supported", "alias *%s is not supported", n.Value)
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, field, "write a list, e.g. [a, b]", "must be a list, got %s", kindOf(n))
		return nil, false
	}
	return n.Content, true
}

// str checks that n is a string scalar without NUL bytes and at most max
// bytes (max <= 0: no cap beyond the file's).
func (p *parser) str(n *yaml.Node, field string, max int) (string, bool) {
	if n.Kind == yaml.AliasNode {
		p.errf(n, field, "write the value out; YAML aliases are not supported", "alias *%s is not supported", n.Value)
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		fix := "write a string"
		if n.Kind == yaml.ScalarNode {
			fix = "quote the value to make it a string"
		}
		p.errf(n, field, fix, "must be a string, got %s", kindOf(n))
		return "", false
	}
	if strings.IndexByte(n.Value, 0) >= 0 {
		p.errf(n, field, "remove the NUL byte", "contains a NUL byte")
		return "", false
	}
	if max > 0 && len(n.Value) > max {
		p.errf(n, field, fmt.Sprintf("shorten it to at most %d bytes", max), "is %d bytes, over the %d-byte cap", len(n.Value), max)
		return "", false
	}
	return n.Value, true
}

// integer checks that n is an integer scalar within [min, max].
func (p *parser) integer(n *yaml.Node, field string, min, max int64) (int64, bool) {
	if n.Kind == yaml.AliasNode {
		p.errf(n, field, "write the value out; YAML aliases are not supported", "alias *%s is not supported", n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.errf(n, field, fmt.Sprintf("write an integer from %d to %d", min, max), "must be an integer, got %s", kindOf(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		p.errf(n, field, fmt.Sprintf("write an integer from %d to %d", min, max), "integer %s is out of range", n.Value)
		return 0, false
	}
	if v < min || v > max {
		p.errf(n, field, fmt.Sprintf("write an integer from %d to %d", min, max), "%d is outside %d..%d", v, min, max)
		return 0, false
	}
	return v, true
}

// enum checks that n is one of the allowed strings.
func (p *parser) enum(n *yaml.Node, field string, allowed ...string) (string, bool) {
	s, ok := p.str(n, field, 64)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	p.errf(n, field, "use one of: "+strings.Join(allowed, ", "), "%q is not one of %s", s, strings.Join(allowed, ", "))
	return "", false
}

// strList checks a list of strings.
func (p *parser) strList(n *yaml.Node, field string, maxItems, maxBytes int) ([]string, bool) {
	items, ok := p.sequence(n, field)
	if !ok {
		return nil, false
	}
	if len(items) > maxItems {
		p.errf(n, field, fmt.Sprintf("keep at most %d entries", maxItems), "has %d entries, over the cap of %d", len(items), maxItems)
		return nil, false
	}
	out := make([]string, 0, len(items))
	good := true
	for i, it := range items {
		s, ok := p.str(it, fmt.Sprintf("%s[%d]", field, i), maxBytes)
		if !ok {
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

func serverField(id string) string {
	if ValidID(id) {
		return "servers." + id
	}
	if len(id) > 40 {
		id = id[:40] + "..."
	}
	return fmt.Sprintf("servers[%q]", id)
}

func (p *parser) servers(n *yaml.Node) []Server {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return []Server{}
	}
	pairs, dup, ok := p.mapping(n, "servers")
	if !ok {
		return []Server{}
	}
	if len(n.Content)/2 > MaxServers {
		p.errf(n, "servers", fmt.Sprintf("declare at most %d servers per file", MaxServers), "declares %d servers, over the cap of %d; no server from this file is loaded", len(n.Content)/2, MaxServers)
		return []Server{}
	}
	out := []Server{}
	for _, kv := range pairs {
		if dup[kv.key] {
			continue
		}
		before := p.errors
		s := p.server(kv)
		if p.errors == before {
			s.Digest = s.ComputeDigest()
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) server(kv kv) Server {
	id := kv.key
	field := serverField(id)
	s := Server{ID: id, Scope: p.scope, File: p.file, Line: kv.k.Line, Column: kv.k.Column,
		Args: []string{}, Env: map[string]string{}, PassEnv: []string{}, StdoutNoise: NoiseIgnore}
	switch {
	case len(id) > MaxIDChars:
		p.errf(kv.k, field, fmt.Sprintf("use at most %d characters", MaxIDChars), "server id is %d characters, over the cap of %d", len(id), MaxIDChars)
	case !idGrammar(id):
		p.errf(kv.k, field, "use lowercase letters, digits, _ and -, starting with a letter or digit", "server id %q does not match %s", id, idRe().String())
	case containsDoubleUnderscore(id):
		p.errf(kv.k, field, "remove the double underscore; __ separates server and tool in capability names", "server id %q contains __", id)
	case strings.HasSuffix(id, "_"):
		p.errf(kv.k, field, "remove the trailing _; its capabilities would read as another server's (a_ with tool echo is a___echo: server a, tool _echo)", "server id %q ends in _", id)
	}
	pairs, dup, ok := p.mapping(kv.v, field)
	if !ok {
		return s
	}
	var cmdSeen bool
	var cwdNode, cliNode, cmdNode *yaml.Node
	for _, f := range pairs {
		if f.key == "cli" && !dup[f.key] {
			cliNode = f.v
		}
	}
	isRemote := p.remoteBlock(&s, pairs, dup, field)
	for _, f := range pairs {
		if dup[f.key] || (isRemote && !contains(sharedServerKeys, f.key) && contains(serverKeys, f.key)) {
			continue // remoteBlock handled it
		}
		ff := joinField(field, f.key)
		switch f.key {
		case "url", "headers", "transport", "oauth", "allowPrivate":
			// remoteBlock reported them
		case "command":
			cmdSeen = true
			if c, ok := p.str(f.v, ff, 0); ok && p.command(f.v, ff, c) {
				s.Command, cmdNode = c, f.v
			}
		case "args":
			if a, ok := p.strList(f.v, ff, MaxArgs, MaxArgBytes); ok {
				s.Args = a
			}
		case "cwd":
			if c, ok := p.str(f.v, ff, MaxCwdBytes); ok {
				s.Cwd = c
				cwdNode = f.v
			}
		case "env":
			s.Env = p.env(f.v, ff)
		case "passEnv":
			s.PassEnv = p.passEnv(f.v, ff)
		case "timeoutMs":
			if v, ok := p.integer(f.v, ff, 1, MaxTimeoutMs); ok {
				s.TimeoutMs = int(v)
			}
		case "actionClass":
			if p.scope == ScopeProject {
				p.errf(f.k, ff, fixActionClass, msgActionClass)
				continue
			}
			if v, ok := p.enum(f.v, ff, ActionRead, ActionExecute, ActionUnknown); ok {
				s.ActionClass = v
			}
		case "stdoutNoise":
			if v, ok := p.enum(f.v, ff, NoiseIgnore, NoiseFatal); ok {
				s.StdoutNoise = v
			}
		case "maxLineBytes":
			if v, ok := p.integer(f.v, ff, MinMaxLineBytes, MaxMaxLineBytes); ok {
				s.MaxLineBytes = int(v)
			}
		case "cli":
			cwdNode = p.cliBlock(&s, f.v, ff)
		case "onToolChange":
			p.onToolChange(&s, f, ff)
		case "tools":
			p.toolSubset(&s, f.v, ff)
		case "expose":
			if g, ok := p.exposeGlobs(f.v, ff, false); ok {
				s.Expose = g
			}
		case "enabled":
			if v, ok := p.boolean(f.v, ff); ok {
				s.Disabled = !v
			}
		default:
			p.unknown(f.k, field, f.key, serverKeys)
		}
	}
	if isRemote {
		return s
	}
	if cliNode != nil {
		p.cliExclusive(pairs, field)
		p.cwd(&s, cwdNode, joinField(field, "cli.cwd"))
		return s
	}
	if !cmdSeen {
		p.errf(kv.k, joinField(field, "command"), "add `command: <absolute path or program name>`, a `cli:` block of argv templates, or `url:` for a remote server", "command is required")
	}
	if cmdNode != nil {
		if why := CommandProblem(p.scope, s.Command, s.Args); why != "" {
			p.errf(cmdNode, joinField(field, "command"), "run the server's program directly: a script file or a package binary, with each argument in args; inline code and shells bypass the argv, env and cwd checks and make the digest describe a launcher", "%s, which is not allowed", why)
		}
	}
	p.cwd(&s, cwdNode, joinField(field, "cwd"))
	return s
}

// windowsPaths: commands are read as Windows reads them (drive-letter and
// UNC absolute paths, either separator). A variable so that tests check
// both rules on every platform.
var windowsPaths = runtime.GOOS == "windows"

// command validates a launch command: an absolute path or a bare program
// name, never a shell, never a command line. On Windows an absolute path
// may hold backslashes, spaces, parentheses and ~ (C:\Program Files
// (x86)\..., PROGRA~1): it is never split or given to a shell, and those
// are ordinary in its file names.
func (p *parser) command(n *yaml.Node, field, c string) bool {
	fixArgs := "put the program in command and each argument in args, e.g. command: npx, args: [-y, pkg]"
	space, syntax := " \t\n\r\v\f", "|&;<>()$`\"'*?[]{}!~#"
	_, winAbs := proc.WindowsAbs(c)
	winAbs = winAbs && windowsPaths
	if winAbs {
		space, syntax = "\t\n\r\v\f", "|&;<>$`\"'*?[]{}!#"
	}
	switch {
	case c == "":
		p.errf(n, field, "name a program", "command is empty")
		return false
	case len(c) > MaxCommandBytes:
		p.errf(n, field, fmt.Sprintf("shorten it to at most %d bytes", MaxCommandBytes), "command is %d bytes, over the %d-byte cap", len(c), MaxCommandBytes)
		return false
	case strings.ContainsAny(c, space) || strings.TrimSpace(c) != c ||
		winAbs && (strings.Contains(c, " -") || strings.Contains(c, " /")): // C:\x\tool.exe -y
		p.errf(n, field, fixArgs, "command %q looks like a shell command line (it contains whitespace); commands are never run through a shell", c)
		return false
	case strings.ContainsAny(c, syntax):
		p.errf(n, field, fixArgs, "command %q contains shell syntax; commands are never run through a shell", c)
		return false
	case hasControl(c):
		p.errf(n, field, "remove control characters", "command contains a control character")
		return false
	case !windowsPaths && strings.Contains(c, `\`):
		p.errf(n, field, "use an absolute path with / or a bare program name", "command %q contains a backslash", c)
		return false
	case strings.HasPrefix(c, "-"):
		p.errf(n, field, "name a program; flags go in args", "command %q starts with -", c)
		return false
	case windowsPaths && strings.ContainsAny(c, `/\:`) && !winAbs:
		p.errf(n, field, `use an absolute path such as C:\Tools\tool.exe or a bare program name found on PATH`, "relative command path %q is not allowed (it would depend on the working directory or drive)", c)
		return false
	case !windowsPaths && strings.Contains(c, "/") && !path.IsAbs(c):
		p.errf(n, field, "use an absolute path or a bare program name found on PATH", "relative command path %q is not allowed (it would depend on the working directory)", c)
		return false
	}
	if isShell(c) {
		p.errf(n, field, "run the server's program directly with command and args; a shell bypasses argv, env and cwd checks", "command %q is a shell or command launcher, which is not allowed", c)
		return false
	}
	return true
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// isShell reports whether the command's program is a shell or a launcher
// (versioned names too: bash5, bash-5.2, zsh5.9, pwsh7 ...).
func isShell(c string) bool {
	_, _, ok := lookup(shells, c)
	return ok
}

func (p *parser) env(n *yaml.Node, field string) map[string]string {
	out := map[string]string{}
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return out
	}
	if len(n.Content)/2 > MaxEnvEntries {
		p.errf(n, field, fmt.Sprintf("keep at most %d entries", MaxEnvEntries), "has %d entries, over the cap of %d", len(n.Content)/2, MaxEnvEntries)
		return out
	}
	for _, e := range pairs {
		if dup[e.key] {
			continue
		}
		ff := joinField(field, e.key)
		if len(e.key) > MaxEnvKeyBytes {
			p.errf(e.k, ff, fmt.Sprintf("use at most %d bytes", MaxEnvKeyBytes), "env key is %d bytes, over the cap of %d", len(e.key), MaxEnvKeyBytes)
			continue
		}
		if !envKeyRe().MatchString(e.key) {
			p.errf(e.k, field, "use uppercase letters, digits and _, not starting with a digit", "env key %q does not match %s", e.key, envKeyRe().String())
			continue
		}
		if why := projectEnvDenied(e.key); why != "" && p.scope == ScopeProject {
			fix := "remove it; if the server really needs it, declare the server in your user config (<config dir>/mcp.yaml), where you are the author"
			if e.key == "PATH" {
				fix = "remove it; bare command names are resolved on your PATH, never on a declared one"
			}
			p.errf(e.k, ff, fix, "a project declaration may not set %s: %s; nothing from this declaration runs", e.key, why)
			continue
		}
		v, ok := p.str(e.v, ff, MaxEnvValueBytes)
		if !ok {
			continue
		}
		if err := scanRefs(v, func(string) {}, func(string) {}); err != nil {
			p.errf(e.v, ff, "write references as ${env:NAME}; write $${ for a literal ${", "%v", err)
			continue
		}
		out[e.key] = v
	}
	return out
}

func (p *parser) passEnv(n *yaml.Node, field string) []string {
	names, ok := p.strList(n, field, MaxPassEnv, MaxEnvKeyBytes)
	if !ok {
		return []string{}
	}
	seen := map[string]bool{}
	for i, name := range names {
		if !envKeyRe().MatchString(name) {
			p.errf(n.Content[i], fmt.Sprintf("%s[%d]", field, i), "use uppercase letters, digits and _, not starting with a digit", "name %q does not match %s", name, envKeyRe().String())
			continue
		}
		if seen[name] {
			p.errf(n.Content[i], fmt.Sprintf("%s[%d]", field, i), "list each name once", "%s is listed twice", name)
			continue
		}
		seen[name] = true
	}
	return names
}

// cwd resolves the server's working directory and containment root.
func (p *parser) cwd(s *Server, n *yaml.Node, field string) {
	pos := n
	if pos == nil {
		pos = &yaml.Node{Line: s.Line, Column: s.Column}
	}
	if p.base == "" || !filepath.IsAbs(p.base) {
		p.errf(pos, field, "", "internal: base directory %q is not absolute", p.base)
		return
	}
	root := p.base
	dir := s.Cwd
	switch {
	case hasControl(dir):
		p.errf(pos, field, "remove control characters", "cwd contains a control character")
		return
	case dir == "~" || strings.HasPrefix(dir, "~/"):
		p.errf(pos, field, "write the path out; ~ is not expanded", "cwd %q starts with ~, which is not expanded", dir)
		return
	case p.scope == ScopeProject && filepath.IsAbs(dir):
		p.errf(pos, field, "write a path relative to the repository root, e.g. cwd: tools/server", "project cwd %q is absolute; it must be repository-relative", dir)
		return
	case p.scope == ScopeUser && filepath.IsAbs(dir):
		root = filepath.Clean(dir) // an absolute directory is its own root
	}
	d := p.dir(root, dir)
	resolved, exists, croot := d.resolved, d.exists, d.croot
	if err := d.err; err != nil {
		fix := "keep cwd inside the repository, without symlinks that lead out of it"
		where := "the repository"
		if p.scope == ScopeUser {
			fix = "use an absolute path, or a path that stays inside the config directory"
			where = "the config directory"
		}
		var pe *PathError
		if errors.Is(err, ErrEscapes) {
			p.errf(pos, field, fix, "cwd %q escapes %s (lexically or through a symlink)", dir, where)
		} else if errors.As(err, &pe) {
			p.errf(pos, field, fix, "cwd %q cannot be resolved: %v", dir, pe.Err)
		} else {
			p.errf(pos, field, fix, "cwd %q cannot be resolved: %v", dir, err)
		}
		return
	}
	if err := d.crootErr; err != nil {
		p.errf(pos, field, "", "cannot resolve %s: %v", root, err)
		return
	}
	if d.notDir {
		p.errf(pos, field, "point cwd at a directory", "cwd %q is not a directory", dir)
		return
	}
	if !exists && n != nil {
		p.warnf(n, field, "create the directory before the server starts", "cwd %q does not exist yet; it is checked again at launch", dir)
	}
	s.Dir, s.Root = resolved, croot
}

// sortedKeys is a helper for deterministic iteration.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
