package clitool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"sluice/gateway/proc"
)

// Output modes.
const (
	OutputText  = "text"  // stdout as one text block (the default)
	OutputJSON  = "json"  // stdout parsed as JSON into structuredContent
	OutputLines = "lines" // stdout split into lines: structuredContent {"lines": [...]}
)

// Defaults and caps of the run.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxConcurrent  = 4
	MaxMaxConcurrent      = 64
	DefaultMaxOutputBytes = 1 << 20
	MaxMaxOutputBytes     = 64 << 20
	stderrTailBytes       = 8 << 10
	stderrLines           = 20
)

var toolNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

// Spec declares one CLI-backed tool and how its command runs. It is plain
// values; the zero value of every optional field is the documented
// default. Policy on argv[0] (no shells, launchers or inline-code
// interpreters) belongs to whoever reads declarations; Spec takes a
// command it has vetted, as proc.Spec does.
type Spec struct {
	Server      string // owning server id, for errors
	Name        string // the tool's name
	Description string // "" = a description generated from the template
	Argv        []Elem // argv[0] is the literal command: an absolute path or a bare name on PATH
	Input       []Param
	Output      string          // OutputText ("" too), OutputJSON or OutputLines
	Annotations json.RawMessage // a JSON object copied into the tool definition; nil = none

	Timeout        time.Duration // per call, queueing included; 0 = DefaultTimeout
	MaxConcurrent  int           // invocations at once; 0 = DefaultMaxConcurrent
	MaxOutputBytes int           // stdout cap; 0 = DefaultMaxOutputBytes

	// Program is argv[0] already resolved to an absolute path by the
	// caller (as a server's command is); "" = resolve argv[0] on the
	// gateway's own PATH at the first call, never on a PATH in Env.
	Program string

	// How the command runs: the same fields, rules and teardown as a
	// server (see proc.Spec).
	Dir           string
	Root          string
	Env           map[string]string // already expanded
	PassEnv       []string
	AllowCommands *proc.AllowList
	StdinGrace    time.Duration
	KillGrace     time.Duration
	KillBound     time.Duration
	NoWatchdog    bool
	// Stderr, if set, also receives every stderr line of every run (the
	// gateway relays them at debug level); it must not block for long.
	Stderr io.Writer
	// ShowArgs, if set, is how the template's literal arguments are shown
	// in Template and in the description made when none is declared
	// (the model reads it): the caller hides credentials there. It gets
	// the whole command line, placeholders included, and must return as
	// many items.
	ShowArgs func(argv []string) []string
	// Scrub, if set, rewrites every stderr line before the tail (which a
	// failed run's result carries to the model) and Stderr get it.
	Scrub proc.Scrubber
}

// Tool is a compiled, callable Spec. It is safe for concurrent use.
type Tool struct {
	spec    Spec
	command string
	atFiles bool // the program reads "@FILE" arguments (responseFileProgram)
	// atProgram names it for errors; curl is set when it is curl.
	atProgram string
	curl      bool
	params    []*param
	byName    map[string]*param
	argv      []node // argv[1:]
	def       json.RawMessage
	sem       chan struct{}
	exe       resolved
}

// Compile checks a declaration and prepares it for calls. Errors are
// *SpecError naming the field. Nothing is resolved or run.
func Compile(s Spec) (*Tool, error) {
	fail := func(err error) (*Tool, error) {
		var se *SpecError
		if errors.As(err, &se) {
			se.Server, se.Tool = s.Server, s.Name
		}
		return nil, err
	}
	specErr := func(field, fix, format string, a ...any) (*Tool, error) {
		return fail(&SpecError{Field: field, Msg: fmt.Sprintf(format, a...), Fix: fix})
	}
	if !toolNameRe().MatchString(s.Name) {
		return specErr("", "use letters, digits, _ . and -, starting with a letter or digit, at most 64 characters", "tool name %q is not valid", s.Name)
	}
	switch s.Output {
	case "":
		s.Output = OutputText
	case OutputText, OutputJSON, OutputLines:
	default:
		return specErr("output", "use text, json or lines", "unknown output %q", s.Output)
	}
	if s.Timeout < 0 {
		return specErr("timeoutMs", "use a positive timeout", "timeout is negative")
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxConcurrent == 0 {
		s.MaxConcurrent = DefaultMaxConcurrent
	}
	if s.MaxConcurrent < 1 || s.MaxConcurrent > MaxMaxConcurrent {
		return specErr("maxConcurrent", fmt.Sprintf("use 1..%d", MaxMaxConcurrent), "maxConcurrent %d is out of range", s.MaxConcurrent)
	}
	if s.MaxOutputBytes == 0 {
		s.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if s.MaxOutputBytes < 1 || s.MaxOutputBytes > MaxMaxOutputBytes {
		return specErr("maxOutputBytes", fmt.Sprintf("use 1..%d", MaxMaxOutputBytes), "maxOutputBytes %d is out of range", s.MaxOutputBytes)
	}
	if s.Annotations != nil {
		a := bytes.TrimSpace(s.Annotations)
		if !json.Valid(a) || len(a) == 0 || a[0] != '{' {
			return specErr("annotations", "write annotations as a mapping, e.g. {readOnlyHint: true}", "annotations are not a JSON object")
		}
	}
	if len(s.Argv) == 0 {
		return specErr("argv", "start argv with the program, e.g. [git, log]", "argv is empty")
	}
	a0 := s.Argv[0]
	if a0.Group != nil || a0.Text == "" || strings.ContainsAny(a0.Text, "{}\x00") {
		return specErr("argv[0]", "make argv[0] the program's absolute path or bare name, with no placeholder", "argv[0] must be a literal command")
	}
	if !filepath.IsAbs(a0.Text) && strings.ContainsRune(a0.Text, '/') {
		return specErr("argv[0]", "use an absolute path or a bare program name found on PATH", "relative command path %q is not allowed", a0.Text)
	}
	if len(s.Input) > MaxParams {
		return specErr("input", fmt.Sprintf("keep at most %d inputs", MaxParams), "%d inputs declared", len(s.Input))
	}
	t := &Tool{spec: s, command: a0.Text, byName: map[string]*param{}}
	if t.atProgram = responseFileProgram(s.Argv); t.atProgram != "" {
		t.atFiles, t.curl = true, t.atProgram == "curl"
	}
	for _, p := range s.Input {
		field := "input." + p.Name
		if !nameRe().MatchString(p.Name) {
			return specErr(field, "use an identifier: letters, digits and _, not starting with a digit", "input name %q is not valid", p.Name)
		}
		if _, dup := t.byName[p.Name]; dup {
			return specErr(field, "give each input one declaration", "input %s is declared twice", p.Name)
		}
		c, err := compileParam(s.Name, p, field, false)
		if err != nil {
			return fail(err)
		}
		t.params = append(t.params, c)
		t.byName[p.Name] = c
	}
	comp := &compiler{tool: s.Name, params: t.byName, used: map[string]bool{}, count: 1}
	nodes, _, err := comp.elems(s.Argv[1:], "argv", 0, 1)
	if err != nil {
		return fail(err)
	}
	t.argv = nodes
	for _, p := range t.params {
		if !comp.used[p.Name] {
			return specErr("input."+p.Name, fmt.Sprintf("use it in argv as {%s}, or remove it", p.Name), "input %s is never used in argv", p.Name)
		}
	}
	t.sem = make(chan struct{}, s.MaxConcurrent)
	t.def = t.definition()
	return t, nil
}

// Name is the tool's name.
func (t *Tool) Name() string { return t.spec.Name }

// Definition is the MCP tool definition: name, description, inputSchema,
// outputSchema (lines only) and annotations, as JSON.
func (t *Tool) Definition() json.RawMessage { return t.def }

// InputSchema is the tool's inputSchema as JSON.
func (t *Tool) InputSchema() json.RawMessage {
	var b bytes.Buffer
	t.schemaJSON(&b)
	return b.Bytes()
}

func (t *Tool) schemaJSON(b *bytes.Buffer) {
	b.WriteString(`{"type":"object","properties":{`)
	var req []string
	for i, p := range t.params {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, p.Name)
		b.WriteByte(':')
		p.schemaJSON(b)
		if p.Required {
			req = append(req, p.Name)
		}
	}
	b.WriteByte('}')
	if len(req) > 0 {
		b.WriteString(`,"required":`)
		j, _ := json.Marshal(req)
		b.Write(j)
	}
	b.WriteString(`,"additionalProperties":false}`)
}

func (t *Tool) definition() json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	writeString(&b, t.spec.Name)
	desc := t.spec.Description
	if desc == "" {
		desc = "Runs " + t.templateText(filepath.Base(t.command)) + "."
	}
	b.WriteString(`,"description":`)
	writeString(&b, desc)
	b.WriteString(`,"inputSchema":`)
	t.schemaJSON(&b)
	if t.spec.Output == OutputLines {
		b.WriteString(`,"outputSchema":{"type":"object","properties":{"lines":{"type":"array","items":{"type":"string"}}},"required":["lines"]}`)
	}
	if t.spec.Annotations != nil {
		b.WriteString(`,"annotations":`)
		compact(&b, t.spec.Annotations)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Template renders the template for people, argv[0] as declared and
// optional groups in brackets: `git log --max-count={limit} [--author={author}]`.
func (t *Tool) Template() string { return t.templateText(t.command) }

func (t *Tool) templateText(cmd string) string {
	// shown[i] is the i-th text element (argv[0] first) as shown: a
	// literal through ShowArgs (as the program gets it: a brace in it is
	// no placeholder), one with a placeholder as written.
	flat := []string{t.spec.Argv[0].Text}
	var collect func(es []Elem)
	collect = func(es []Elem) {
		for _, e := range es {
			if e.Group != nil {
				collect(e.Group)
				continue
			}
			if lit, ok := Literal(e.Text); ok {
				flat = append(flat, lit)
			} else {
				flat = append(flat, e.Text)
			}
		}
	}
	collect(t.spec.Argv[1:])
	shown := flat
	if t.spec.ShowArgs != nil {
		if s := t.spec.ShowArgs(flat); len(s) == len(flat) {
			shown = s
		}
	}
	next := 1
	var walk func(es []Elem) []string
	walk = func(es []Elem) []string {
		var out []string
		for _, e := range es {
			if e.Group != nil {
				out = append(out, "["+strings.Join(walk(e.Group), " ")+"]")
				continue
			}
			text := e.Text
			if _, lit := Literal(text); lit && shown[next] != flat[next] {
				// hidden, in whole or part; a literal shown unchanged
				// stays as written ({{x}}, not {x}, which reads as a
				// placeholder)
				text = shown[next]
			}
			next++
			out = append(out, text)
		}
		return out
	}
	return strings.Join(append([]string{cmd}, walk(t.spec.Argv[1:])...), " ")
}

// bind validates the call's arguments and applies defaults. Every problem
// is reported, in declaration order (unknown names last, sorted).
func (t *Tool) bind(args json.RawMessage) (map[*param]value, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return nil, &ArgError{Tool: t.spec.Name, Reason: ReasonNotObject, Msg: "arguments must be a JSON object"}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, &ArgError{Tool: t.spec.Name, Reason: ReasonNotObject, Msg: "arguments are not a valid JSON object"}
	}
	vals := make(map[*param]value, len(t.params))
	var errs []error
	for _, p := range t.params {
		raw, ok := m[p.Name]
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			switch {
			case p.def != nil:
				vals[p] = *p.def
			case p.Required:
				errs = append(errs, &ArgError{Tool: t.spec.Name, Arg: p.Name, Reason: ReasonMissing, Msg: "is required"})
			}
			continue
		}
		v, e := p.check(raw)
		if e != nil {
			errs = append(errs, &ArgError{Tool: t.spec.Name, Arg: p.Name, Reason: e.Reason, Msg: e.Msg})
			continue
		}
		vals[p] = v
	}
	var unknown []string
	for k := range m {
		if t.byName[k] == nil {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		msg := "is not an input of this tool"
		if len(t.params) > 0 {
			names := make([]string, len(t.params))
			for i, p := range t.params {
				names[i] = p.Name
			}
			msg += " (inputs: " + strings.Join(names, ", ") + ")"
		}
		if len(k) > 64 || strings.IndexByte(k, 0) >= 0 {
			k = k[:min(len(k), 64)]
			k = strings.ReplaceAll(k, "\x00", "")
		}
		errs = append(errs, &ArgError{Tool: t.spec.Name, Arg: k, Reason: ReasonUnknown, Msg: msg})
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return vals, nil
}

// Argv validates args and renders the full argv (argv[0] as declared)
// without running anything. Errors are *ArgError (or several joined).
func (t *Tool) Argv(args json.RawMessage) ([]string, error) {
	vals, err := t.bind(args)
	if err != nil {
		return nil, err
	}
	return t.render(vals)
}

type renderer struct {
	t       *Tool
	vals    map[*param]value
	out     []string
	afterDD bool // a literal "--" element has been rendered
	bytes   int
}

func (t *Tool) render(vals map[*param]value) ([]string, error) {
	r := &renderer{t: t, vals: vals, out: []string{t.command}, bytes: len(t.command) + 1}
	if err := r.nodes(t.argv, false); err != nil {
		return nil, err
	}
	return r.out, nil
}

func (r *renderer) nodes(ns []node, inGroup bool) error {
	for i := range ns {
		n := &ns[i]
		switch {
		case n.isGroup:
			if r.ready(n) {
				if err := r.nodes(n.group, true); err != nil {
					return err
				}
			}
		case n.expand != nil:
			for _, it := range r.vals[n.expand].items {
				if err := r.value(n.expand, it); err != nil {
					return err
				}
				if err := r.atFile(it, r.out[len(r.out)-1], []span{{n.expand, 0, len(it)}}); err != nil {
					return err
				}
				if err := r.emit(n.expand, it); err != nil {
					return err
				}
			}
		default:
			var b strings.Builder
			var spans []span
			onlyBool := !n.literal
			for _, s := range n.segs {
				if s.p == nil {
					b.WriteString(s.lit)
					onlyBool = false
					continue
				}
				v := r.vals[s.p]
				if s.p.Type == TypeBoolean {
					if !inGroup {
						// Outside a group a boolean renders as its text.
						fmt.Fprint(&b, v.b)
						onlyBool = false
					}
					continue
				}
				onlyBool = false
				if err := r.value(s.p, v.str); err != nil {
					return err
				}
				spans = append(spans, span{s.p, b.Len(), b.Len() + len(v.str)})
				b.WriteString(v.str)
			}
			if onlyBool {
				continue // an element made only of the group's deciding booleans
			}
			if err := r.atFile(b.String(), r.out[len(r.out)-1], spans); err != nil {
				return err
			}
			if err := r.emit(nil, b.String()); err != nil {
				return err
			}
			if n.literal && b.String() == "--" {
				r.afterDD = true
			}
		}
	}
	return nil
}

// ready reports whether a group renders: every placeholder in its own
// elements has a value; a boolean must be true and an array non-empty.
func (r *renderer) ready(n *node) bool {
	for _, p := range n.direct {
		v, ok := r.vals[p]
		if !ok || (p.Type == TypeBoolean && !v.b) || (p.Type == TypeArray && len(v.items) == 0) {
			return false
		}
	}
	return true
}

// value applies the refusals to one substituted value.
func (r *renderer) value(p *param, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return &ArgError{Tool: r.t.spec.Name, Arg: p.Name, Reason: ReasonNUL, Msg: "contains a NUL character, which no argv element can hold"}
	}
	if strings.HasPrefix(s, "-") && !r.afterDD && !p.AllowDash {
		return &ArgError{Tool: r.t.spec.Name, Arg: p.Name, Reason: ReasonDash,
			Msg: "starts with \"-\", so the command could read it as an option; values may not start with \"-\" here"}
	}
	return nil
}

func (r *renderer) emit(p *param, s string) error {
	name := ""
	if p != nil {
		name = p.Name
	}
	if len(s) > MaxArgBytes {
		return &ArgError{Tool: r.t.spec.Name, Arg: name, Reason: ReasonTooLong, Msg: fmt.Sprintf("renders an argv element of %d bytes, over the %d-byte cap", len(s), MaxArgBytes)}
	}
	r.bytes += len(s) + 1
	if r.bytes > MaxArgvBytes {
		return &ArgError{Tool: r.t.spec.Name, Arg: name, Reason: ReasonTooLong, Msg: fmt.Sprintf("the rendered argv is over the %d-byte cap", MaxArgvBytes)}
	}
	r.out = append(r.out, s)
	return nil
}
