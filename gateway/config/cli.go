package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"sluice/gateway/clitool"
)

// Caps of the cli block.
const (
	MaxCLITools          = 64 // tools per cli server
	MaxDescriptionBytes  = 4096
	maxCLIArgvDepth      = clitool.MaxDepth
	MaxCLIOutputBytes    = clitool.MaxMaxOutputBytes
	MaxCLIMaxConcurrent  = clitool.MaxMaxConcurrent
	maxCLIDefaultEntries = clitool.MaxArrayItems
)

var cliKeys = []string{"cwd", "env", "passEnv", "tools"}

var cliToolKeys = []string{"description", "argv", "input", "output", "annotations", "timeoutMs", "maxConcurrent", "maxOutputBytes"}

var cliInputKeys = []string{"type", "description", "required", "default", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "enum", "items", "allowDash"}

var cliItemKeys = []string{"type", "description", "minimum", "maximum", "minLength", "maxLength", "enum"}

var annotationKeys = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// jsonIntRe and jsonNumRe are the JSON number grammars a YAML number must
// also satisfy (YAML's 0x10, 1_000 or .inf are refused).
var (
	jsonIntRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`) })
	jsonNumRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`) })
)

// CLI is the cli block of a server: its tools are argv templates over an
// existing program, run by the gateway itself (package clitool). The
// block's cwd, env and passEnv are the server's Cwd, Dir, Root, Env and
// PassEnv, with the same rules as a launched server's.
type CLI struct {
	Tools []CLITool // in file order
}

// CLITool is one validated tool declaration. Spec carries everything the
// declaration says (Server, Name, Description, Argv, Input, Output,
// Annotations, Timeout, MaxConcurrent, MaxOutputBytes) and has been
// compiled once by clitool; the fields saying how it runs (Dir, Env,
// AllowCommands, graces) are the launcher's to fill.
type CLITool struct {
	Name         string
	Line, Column int // position of the tool's key
	TimeoutMs    int // as written; 0 = the server's timeoutMs, else the gateway's default
	Spec         clitool.Spec
	// Program is argv[0] resolved on the gateway's PATH by Load, exactly
	// as a server's command (Server.Program); "" when not found.
	Program string
}

// Tool returns the tool declaration with the given name.
func (c *CLI) Tool(name string) (CLITool, bool) {
	for _, t := range c.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return CLITool{}, false
}

// cliBlock parses servers.<id>.cli into s.
func (p *parser) cliBlock(s *Server, n *yaml.Node, field string) (cwdNode *yaml.Node) {
	s.CLI = &CLI{Tools: []CLITool{}}
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return nil
	}
	var toolsSeen bool
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := joinField(field, f.key)
		switch f.key {
		case "cwd":
			if c, ok := p.str(f.v, ff, MaxCwdBytes); ok {
				s.Cwd = c
				cwdNode = f.v
			}
		case "env":
			s.Env = p.env(f.v, ff)
		case "passEnv":
			s.PassEnv = p.passEnv(f.v, ff)
		case "tools":
			toolsSeen = true
			p.cliTools(s, f.v, ff)
		default:
			p.unknown(f.k, field, f.key, cliKeys)
		}
	}
	if !toolsSeen {
		p.errf(n, joinField(field, "tools"), "add tools: {name: {argv: [program, ...]}}", "a cli block needs tools")
	}
	return cwdNode
}

func (p *parser) cliTools(s *Server, n *yaml.Node, field string) {
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return
	}
	if len(pairs) == 0 {
		p.errf(n, field, "declare at least one tool", "tools is empty")
		return
	}
	if len(n.Content)/2 > MaxCLITools {
		p.errf(n, field, fmt.Sprintf("declare at most %d tools", MaxCLITools), "declares %d tools, over the cap of %d", len(n.Content)/2, MaxCLITools)
		return
	}
	for _, kv := range pairs {
		if dup[kv.key] {
			continue
		}
		before := p.errors
		t := p.cliTool(s, kv, joinField(field, kv.key))
		if p.errors == before {
			s.CLI.Tools = append(s.CLI.Tools, t)
		}
	}
}

// cliPos maps clitool's field paths ("argv[2][0]", "input.limit.default")
// to the node that wrote them, so a compile error gets a file position.
type cliPos map[string]*yaml.Node

func (m cliPos) find(field string) *yaml.Node {
	for f := field; f != ""; {
		if n, ok := m[f]; ok {
			return n
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return m[""]
}

func (p *parser) cliTool(s *Server, kv kv, field string) CLITool {
	t := CLITool{Name: kv.key, Line: kv.k.Line, Column: kv.k.Column}
	t.Spec = clitool.Spec{Server: s.ID, Name: kv.key}
	pos := cliPos{"": kv.k}
	pairs, dup, ok := p.mapping(kv.v, field)
	if !ok {
		return t
	}
	before := p.errors
	var argvSeen bool
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := joinField(field, f.key)
		pos[f.key] = f.v
		switch f.key {
		case "description":
			if d, ok := p.str(f.v, ff, MaxDescriptionBytes); ok {
				t.Spec.Description = d
			}
		case "argv":
			argvSeen = true
			t.Spec.Argv = p.cliArgv(f.v, ff, pos)
		case "input":
			t.Spec.Input = p.cliInputs(f.v, ff, pos)
		case "output":
			if v, ok := p.enum(f.v, ff, clitool.OutputText, clitool.OutputJSON, clitool.OutputLines); ok {
				t.Spec.Output = v
			}
		case "annotations":
			t.Spec.Annotations = p.cliAnnotations(f.v, ff)
		case "timeoutMs":
			if v, ok := p.integer(f.v, ff, 1, MaxTimeoutMs); ok {
				t.TimeoutMs = int(v)
			}
		case "maxConcurrent":
			if v, ok := p.integer(f.v, ff, 1, MaxCLIMaxConcurrent); ok {
				t.Spec.MaxConcurrent = int(v)
			}
		case "maxOutputBytes":
			if v, ok := p.integer(f.v, ff, 1, MaxCLIOutputBytes); ok {
				t.Spec.MaxOutputBytes = int(v)
			}
		default:
			p.unknown(f.k, field, f.key, cliToolKeys)
		}
	}
	if !argvSeen {
		p.errf(kv.k, joinField(field, "argv"), "add argv: [program, arg, \"--flag={input}\"]", "argv is required")
	}
	if p.errors > before {
		return t
	}
	p.cliCommand(pos["argv[0]"], joinField(field, "argv[0]"), t.Spec.Argv, t.Spec.Input)
	if p.errors > before {
		return t
	}
	if t.TimeoutMs > 0 {
		t.Spec.Timeout = time.Duration(t.TimeoutMs) * time.Millisecond
	}
	// Everything that does not depend on a call is checked now, by the
	// package that runs the tool, so a declaration error has a position.
	if _, err := clitool.Compile(t.Spec); err != nil {
		var se *clitool.SpecError
		if errors.As(err, &se) {
			p.errf(pos.find(se.Field), joinField(field, se.Field), se.Fix, "%s", se.Msg)
		} else {
			p.errf(kv.k, field, "", "%v", err)
		}
	}
	return t
}

// cliArgv parses the argv template: strings and nested lists (optional
// groups). argv[0] must be a program, with the rules of a server's command.
func (p *parser) cliArgv(n *yaml.Node, field string, pos cliPos) []clitool.Elem {
	items, ok := p.sequence(n, field)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.errf(n, field, "start argv with the program, e.g. [git, log]", "argv is empty")
		return nil
	}
	out := p.cliElems(items, field, "argv", pos, 0)
	if len(out) > 0 && out[0].Group == nil {
		p.command(items[0], field+"[0]", out[0].Text)
	} else if len(out) > 0 {
		p.errf(items[0], field+"[0]", "make argv[0] the program", "argv[0] must be a program, not an optional group")
	}
	return out
}

func (p *parser) cliElems(items []*yaml.Node, field, rel string, pos cliPos, depth int) []clitool.Elem {
	out := make([]clitool.Elem, 0, len(items))
	for i, it := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		r := fmt.Sprintf("%s[%d]", rel, i)
		pos[r] = it
		if it.Kind == yaml.SequenceNode {
			if depth+1 > maxCLIArgvDepth {
				p.errf(it, f, fmt.Sprintf("nest optional groups at most %d deep", maxCLIArgvDepth), "optional groups nested too deep")
				continue
			}
			out = append(out, clitool.Elem{Group: p.cliElems(it.Content, f, r, pos, depth+1)})
			continue
		}
		s, ok := p.str(it, f, clitool.MaxElemBytes)
		if !ok {
			continue
		}
		out = append(out, clitool.Elem{Text: s})
	}
	return out
}

// literalArgs flattens a template after argv[0] as the command checks
// see it: every element, groups included, placeholders left as written.
func literalArgs(es []clitool.Elem) []string {
	var out []string
	for _, e := range es {
		if e.Group != nil {
			out = append(out, literalArgs(e.Group)...)
			continue
		}
		out = append(out, e.Text)
	}
	return out
}

// cliCommand applies a server command's rules to a tool's program and
// its template (CommandProblem: shells, launchers, inline code, find
// -exec ...), plus two that only templates need: a launcher may not run a
// program the caller names, and an interpreter or launcher may not take
// dash values (allowDash would let the caller pass it an inline-code
// option).
func (p *parser) cliCommand(n *yaml.Node, field string, argv []clitool.Elem, input []clitool.Param) {
	fix := "run a script file or a real program directly; inline code and launchers bypass the template's typed arguments"
	cmd, args := argv[0].Text, literalArgs(argv[1:])
	if why := CommandProblem(p.scope, cmd, args); why != "" {
		p.errf(n, field, fix, "%s, which is not allowed", why)
		return
	}
	if l, name, ok := lookup(launchers, cmd); ok {
		if inner, _, _ := l.inner(name, args); strings.Contains(inner, "{") {
			p.errf(n, field, fix, "command %q runs %s, a program the caller would choose, which is not allowed", cmd, inner)
			return
		}
	}
	_, _, isInterp := lookup(interps, cmd)
	_, _, isLauncher := lookup(launchers, cmd)
	if isInterp || isLauncher {
		for _, in := range input {
			if in.AllowDash {
				p.errf(n, field, "remove allowDash from input "+in.Name, "command %q with allowDash on input %s would let the caller pass it options such as inline code, which is not allowed", cmd, in.Name)
				return
			}
		}
	}
}

func (p *parser) cliInputs(n *yaml.Node, field string, pos cliPos) []clitool.Param {
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return nil
	}
	if len(pairs) > clitool.MaxParams {
		p.errf(n, field, fmt.Sprintf("declare at most %d inputs", clitool.MaxParams), "declares %d inputs", len(pairs))
		return nil
	}
	out := make([]clitool.Param, 0, len(pairs))
	for _, kv := range pairs {
		if dup[kv.key] {
			continue
		}
		rel := "input." + kv.key
		pos[rel] = kv.k
		prm := p.cliParam(kv.v, joinField(field, kv.key), rel, pos, false)
		prm.Name = kv.key
		out = append(out, prm)
	}
	return out
}

func (p *parser) cliParam(n *yaml.Node, field, rel string, pos cliPos, item bool) clitool.Param {
	var prm clitool.Param
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return prm
	}
	keys := cliInputKeys
	if item {
		keys = cliItemKeys
	}
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := joinField(field, f.key)
		pos[rel+"."+f.key] = f.v
		if !contains(keys, f.key) {
			p.unknown(f.k, field, f.key, keys)
			continue
		}
		switch f.key {
		case "type":
			if v, ok := p.enum(f.v, ff, clitool.TypeString, clitool.TypeInteger, clitool.TypeNumber, clitool.TypeBoolean, clitool.TypeArray); ok {
				prm.Type = v
			}
		case "description":
			if v, ok := p.str(f.v, ff, MaxDescriptionBytes); ok {
				prm.Description = v
			}
		case "required":
			prm.Required, _ = p.boolean(f.v, ff)
		case "allowDash":
			prm.AllowDash, _ = p.boolean(f.v, ff)
		case "default":
			if f.v.Kind == yaml.SequenceNode {
				if len(f.v.Content) > maxCLIDefaultEntries {
					p.errf(f.v, ff, "shorten the list", "default has %d items", len(f.v.Content))
					continue
				}
				parts := make([]string, 0, len(f.v.Content))
				good := true
				for i, it := range f.v.Content {
					j, ok := p.jsonScalar(it, fmt.Sprintf("%s[%d]", ff, i))
					good = good && ok
					parts = append(parts, j)
				}
				if good {
					prm.Default = json.RawMessage("[" + strings.Join(parts, ",") + "]")
				}
				continue
			}
			if j, ok := p.jsonScalar(f.v, ff); ok {
				prm.Default = json.RawMessage(j)
			}
		case "minimum", "maximum":
			j, ok := p.jsonScalar(f.v, ff)
			if !ok {
				continue
			}
			if j[0] != '-' && (j[0] < '0' || j[0] > '9') {
				p.errf(f.v, ff, "write a number", "must be a number, got %s", kindOf(f.v))
				continue
			}
			if f.key == "minimum" {
				prm.Minimum = j
			} else {
				prm.Maximum = j
			}
		case "minLength", "maxLength", "minItems", "maxItems":
			v, ok := p.integer(f.v, ff, 0, int64(clitool.MaxArgBytes))
			if !ok {
				continue
			}
			switch f.key {
			case "minLength":
				prm.MinLength = int(v)
			case "maxLength":
				prm.MaxLength = int(v)
			case "minItems":
				prm.MinItems = int(v)
			case "maxItems":
				prm.MaxItems = int(v)
			}
		case "enum":
			items, ok := p.sequence(f.v, ff)
			if !ok {
				continue
			}
			prm.Enum = []json.RawMessage{}
			for i, it := range items {
				if j, ok := p.jsonScalar(it, fmt.Sprintf("%s[%d]", ff, i)); ok {
					prm.Enum = append(prm.Enum, json.RawMessage(j))
				}
			}
		case "items":
			it := p.cliParam(f.v, ff, rel+".items", pos, true)
			prm.Items = &it
		}
	}
	if prm.Type == "" && !hasKey(pairs, "type") {
		p.errf(n, joinField(field, "type"), "add type: string|integer|number|boolean|array", "type is required")
	}
	return prm
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasKey(pairs []kv, key string) bool {
	for _, f := range pairs {
		if f.key == key {
			return true
		}
	}
	return false
}

// boolean checks that n is a YAML boolean.
func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		p.errf(n, field, "write true or false", "must be a boolean, got %s", kindOf(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		p.errf(n, field, "write true or false", "must be a boolean")
		return false, false
	}
	return b, true
}

// jsonScalar converts a YAML scalar to JSON text: strings are quoted,
// numbers must already be JSON numbers (no 0x10, 1_000, .inf), booleans
// are true or false. null, mappings and lists are refused.
func (p *parser) jsonScalar(n *yaml.Node, field string) (string, bool) {
	if n.Kind == yaml.AliasNode {
		p.errf(n, field, "write the value out; YAML aliases are not supported", "alias *%s is not supported", n.Value)
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		p.errf(n, field, "write a string, number or boolean", "must be a scalar, got %s", kindOf(n))
		return "", false
	}
	switch n.Tag {
	case "!!str":
		if strings.IndexByte(n.Value, 0) >= 0 {
			p.errf(n, field, "remove the NUL byte", "contains a NUL byte")
			return "", false
		}
		b, _ := json.Marshal(n.Value)
		return string(b), true
	case "!!int":
		if !jsonIntRe().MatchString(n.Value) || len(n.Value) > clitool.MaxNumberBytes {
			p.errf(n, field, "write a plain decimal integer", "integer %s is not a plain decimal", n.Value)
			return "", false
		}
		return n.Value, true
	case "!!float":
		if !jsonNumRe().MatchString(n.Value) || len(n.Value) > clitool.MaxNumberBytes {
			p.errf(n, field, "write a plain decimal number such as 1.5 or 2e3", "number %s is not a plain decimal", n.Value)
			return "", false
		}
		return n.Value, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			p.errf(n, field, "write true or false", "must be a boolean")
			return "", false
		}
		if b {
			return "true", true
		}
		return "false", true
	}
	p.errf(n, field, "write a string, number or boolean (quote it to make it a string)", "must be a string, number or boolean, got %s", kindOf(n))
	return "", false
}

// cliAnnotations parses MCP tool annotations into a JSON object.
func (p *parser) cliAnnotations(n *yaml.Node, field string) json.RawMessage {
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return nil
	}
	m := map[string]any{}
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := joinField(field, f.key)
		switch f.key {
		case "title":
			if v, ok := p.str(f.v, ff, MaxDescriptionBytes); ok {
				m[f.key] = v
			}
		case "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint":
			if v, ok := p.boolean(f.v, ff); ok {
				m[f.key] = v
			}
		default:
			p.unknown(f.k, field, f.key, annotationKeys)
		}
	}
	b, _ := json.Marshal(m) // sorted keys: the digest does not depend on order
	return b
}

// encode is the canonical encoding of the whole cli block: every
// tool (sorted by name) with everything it declares, inputs sorted by
// name. json.Marshal of maps sorts keys, and raw JSON numbers stay as
// written, so the encoding depends on what was declared, not on how the
// YAML was laid out.
func (c *CLI) encode() string {
	type param struct {
		Type, Description, Minimum, Maximum string
		Required, AllowDash                 bool
		Default                             string
		MinLength, MaxLength                int
		MinItems, MaxItems                  int
		Enum                                []string
		Items                               *param
	}
	var conv func(p clitool.Param) param
	conv = func(p clitool.Param) param {
		q := param{Type: p.Type, Description: p.Description, Minimum: p.Minimum, Maximum: p.Maximum,
			Required: p.Required, AllowDash: p.AllowDash, Default: string(p.Default),
			MinLength: p.MinLength, MaxLength: p.MaxLength, MinItems: p.MinItems, MaxItems: p.MaxItems}
		for _, e := range p.Enum {
			q.Enum = append(q.Enum, string(e))
		}
		if p.Items != nil {
			it := conv(*p.Items)
			q.Items = &it
		}
		return q
	}
	var elems func(es []clitool.Elem) []any
	elems = func(es []clitool.Elem) []any {
		out := make([]any, 0, len(es))
		for _, e := range es {
			if e.Group != nil {
				out = append(out, elems(e.Group))
			} else {
				out = append(out, e.Text)
			}
		}
		return out
	}
	type tool struct {
		Description, Output, Annotations      string
		Argv                                  []any
		Input                                 map[string]param
		TimeoutMs, MaxConcurrent, MaxOutBytes int
	}
	tools := map[string]tool{}
	for _, t := range c.Tools {
		in := map[string]param{}
		for _, p := range t.Spec.Input {
			in[p.Name] = conv(p)
		}
		tools[t.Name] = tool{Description: t.Spec.Description, Output: t.Spec.Output, Annotations: string(t.Spec.Annotations),
			Argv: elems(t.Spec.Argv), Input: in, TimeoutMs: t.TimeoutMs, MaxConcurrent: t.Spec.MaxConcurrent, MaxOutBytes: t.Spec.MaxOutputBytes}
	}
	b, _ := json.Marshal(tools)
	return string(b)
}

// cliExclusive refuses the server fields that mean nothing, or something
// else, next to a cli block.
func (p *parser) cliExclusive(pairs []kv, field string) {
	for _, f := range pairs {
		switch f.key {
		case "command", "args":
			p.errf(f.k, joinField(field, f.key), "remove it; each tool's argv names its program", "%s cannot be used with cli: a cli server runs its tools' argv, not a server command", f.key)
		case "cwd", "env", "passEnv":
			p.errf(f.k, joinField(field, f.key), fmt.Sprintf("move it under cli: (cli.%s)", f.key), "%s of a cli server belongs in its cli block", f.key)
		case "stdoutNoise", "maxLineBytes", "onToolChange":
			p.errf(f.k, joinField(field, f.key), "remove it", "%s applies to MCP servers, not to a cli block", f.key)
		}
	}
}

// resolveCLI sets each tool's Program (argv[0] on the gateway's PATH) and
// checks it like a server's resolved command (CheckProgram: symlinks
// followed, compared with the installed shells). The server's Program is
// the tools' programs, sorted, deduplicated and joined with ", ", so a
// trust record binds what every tool runs. It returns why the server must
// not load, or "".
func (s *Server) resolveCLI(path string, check *programChecker) (string, int, int) {
	seen := map[string]bool{}
	var progs []string
	for i := range s.CLI.Tools {
		t := &s.CLI.Tools[i]
		t.Program = ResolveProgram(t.Spec.Argv[0].Text, path)
		if t.Program == "" {
			continue
		}
		if why := check.check(s.Scope, t.Program, literalArgs(t.Spec.Argv[1:])); why != "" {
			return "tool " + t.Name + ": " + why, t.Line, t.Column
		}
		if !seen[t.Program] {
			seen[t.Program] = true
			progs = append(progs, t.Program)
		}
	}
	sort.Strings(progs)
	s.Program = strings.Join(progs, ", ")
	return "", 0, 0
}
