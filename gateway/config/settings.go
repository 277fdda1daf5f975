package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Settings are the user-scope knobs. Every zero value means "the gateway's
// documented default".
type Settings struct {
	Approve       []string // capability globs approved without prompting
	IdleTimeoutMs int64
	Sandbox       SandboxLimits
	Filters       []Filter
	Results       Results
	Profiles      map[string]Profile // by name; nil = none declared
	// Expose lists capability globs (SERVER__TOOL) served as direct
	// tools beside the gateway tools; see expose.go. ExposeFile and
	// ExposeLine say where the list is, for warnings.
	Expose     []string
	ExposeFile string
	ExposeLine int

	// Invalid lists the top-level settings keys that had errors and were
	// dropped (left at their defaults). A gateway that cannot run safely
	// without them (filters in particular) should refuse to start.
	Invalid []string
}

// SandboxLimits bound one code-mode script. Zero = default.
type SandboxLimits struct {
	MaxSteps       int64
	TimeoutMs      int64
	MaxCalls       int64
	MaxResultBytes int64
	MaxLogBytes    int64
	MaxOutputBytes int64
	MaxMemoryBytes int64
	MaxConcurrency int64
	MaxDepth       int64
}

// Filter stages and error policies.
const (
	StageResult     = "result"
	StageContext    = "context"
	OnErrorClosed   = "fail-closed"
	OnErrorOpen     = "fail-open"
	BuiltinPrefix   = "builtin:"
	filterExtension = ".wasm"
)

// Filter is one WASM result filter.
type Filter struct {
	Module       string          // as written: "builtin:NAME" or a path
	Builtin      string          // NAME for builtin modules, else ""
	Path         string          // absolute path for file modules, else ""
	SHA256       string          // lowercase hex, "" = not pinned
	Capabilities []string        // globs; default ["*"]
	Stage        string          // StageResult (default) or StageContext
	Config       json.RawMessage // the YAML config as JSON; nil when absent
	OnError      string          // OnErrorClosed (default) or OnErrorOpen
	TimeoutMs    int64           // per call, 1..MaxFilterTimeout; 0 = the filter host's default (100 ms)
	// TimeoutPerMiBMs is added to a call's deadline per MiB of its input
	// (pro rata), 1..MaxFilterTimeout; 0 = the filter host's default (2 s).
	TimeoutPerMiBMs int64
	File            string
	Line, Column    int
}

// Results configures offloaded results. Zero = default.
type Results struct {
	Dir        string // absolute; "" = <state dir>/results
	TtlMs      int64
	QuotaBytes int64
}

var sandboxKeys = []string{"maxSteps", "timeoutMs", "maxCalls", "maxResultBytes", "maxLogBytes", "maxOutputBytes", "maxMemoryBytes", "maxConcurrency", "maxDepth"}
var filterKeys = []string{"module", "sha256", "capabilities", "stage", "config", "onError", "timeoutMs", "timeoutPerMiBMs"}
var resultsKeys = []string{"dir", "ttlMs", "quotaBytes"}

const maxInt64 = 1<<63 - 1

func (p *parser) setting(st *Settings, f kv) {
	switch f.key {
	case "approve":
		if g, ok := p.globs(f.v, "approve", MaxApprove); ok {
			st.Approve = g
		}
	case "idleTimeoutMs":
		if v, ok := p.integer(f.v, "idleTimeoutMs", 1, maxInt64); ok {
			st.IdleTimeoutMs = v
		}
	case "sandbox":
		p.sandbox(st, f.v)
	case "filters":
		p.filters(st, f.v)
	case "results":
		p.results(st, f.v)
	case "profiles":
		p.profiles(st, f.v)
	case "expose":
		if g, ok := p.exposeGlobs(f.v, "expose", true); ok {
			st.Expose, st.ExposeFile, st.ExposeLine = g, p.file, f.k.Line
		}
	}
}

func (p *parser) sandbox(st *Settings, n *yaml.Node) {
	pairs, dup, ok := p.mapping(n, "sandbox")
	if !ok {
		return
	}
	var lim SandboxLimits
	dst := map[string]*int64{
		"maxSteps": &lim.MaxSteps, "timeoutMs": &lim.TimeoutMs, "maxCalls": &lim.MaxCalls,
		"maxResultBytes": &lim.MaxResultBytes, "maxLogBytes": &lim.MaxLogBytes,
		"maxOutputBytes": &lim.MaxOutputBytes, "maxMemoryBytes": &lim.MaxMemoryBytes,
		"maxConcurrency": &lim.MaxConcurrency, "maxDepth": &lim.MaxDepth,
	}
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		d, known := dst[f.key]
		if !known {
			p.unknown(f.k, "sandbox", f.key, sandboxKeys)
			continue
		}
		if v, ok := p.integer(f.v, "sandbox."+f.key, 1, maxInt64); ok {
			*d = v
		}
	}
	st.Sandbox = lim
}

func (p *parser) results(st *Settings, n *yaml.Node) {
	pairs, dup, ok := p.mapping(n, "results")
	if !ok {
		return
	}
	var r Results
	for _, f := range pairs {
		if dup[f.key] {
			continue
		}
		ff := "results." + f.key
		switch f.key {
		case "dir":
			d, ok := p.str(f.v, ff, MaxCwdBytes)
			if !ok || d == "" {
				continue
			}
			if !filepath.IsAbs(d) {
				d = filepath.Join(p.base, d)
			}
			r.Dir = filepath.Clean(d)
		case "ttlMs":
			if v, ok := p.integer(f.v, ff, 1, maxInt64); ok {
				r.TtlMs = v
			}
		case "quotaBytes":
			if v, ok := p.integer(f.v, ff, 1, maxInt64); ok {
				r.QuotaBytes = v
			}
		default:
			p.unknown(f.k, "results", f.key, resultsKeys)
		}
	}
	st.Results = r
}

// globs validates capability globs (path.Match syntax, no whitespace).
func (p *parser) globs(n *yaml.Node, field string, max int) ([]string, bool) {
	gs, ok := p.strList(n, field, max, MaxGlobBytes)
	if !ok {
		return nil, false
	}
	good := true
	for i, g := range gs {
		ff := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case g == "":
			p.errf(n.Content[i], ff, "write a capability name or glob such as fs__read_*", "glob is empty")
			good = false
		case strings.ContainsAny(g, " \t\r\n") || hasControl(g):
			p.errf(n.Content[i], ff, "remove whitespace and control characters", "glob %q contains whitespace or control characters", g)
			good = false
		default:
			if err := CheckGlob(g); err != nil {
				p.errf(n.Content[i], ff, "fix the glob: * ? [..] [^..] and \\ escapes are supported", "%v", err)
				good = false
			}
		}
	}
	return gs, good
}

func (p *parser) filters(st *Settings, n *yaml.Node) {
	items, ok := p.sequence(n, "filters")
	if !ok {
		return
	}
	if len(items) > MaxFilters {
		p.errf(n, "filters", fmt.Sprintf("keep at most %d filters", MaxFilters), "has %d filters, over the cap of %d", len(items), MaxFilters)
		return
	}
	out := make([]Filter, 0, len(items))
	for i, it := range items {
		field := fmt.Sprintf("filters[%d]", i)
		before := p.errors
		f := p.filter(it, field)
		if p.errors == before {
			out = append(out, f)
		}
	}
	st.Filters = out
}

func (p *parser) filter(n *yaml.Node, field string) Filter {
	f := Filter{File: p.file, Line: n.Line, Column: n.Column, Stage: StageResult, OnError: OnErrorClosed, Capabilities: []string{"*"}}
	pairs, dup, ok := p.mapping(n, field)
	if !ok {
		return f
	}
	var modSeen bool
	var shaNode *yaml.Node
	for _, e := range pairs {
		if dup[e.key] {
			continue
		}
		ff := field + "." + e.key
		switch e.key {
		case "module":
			modSeen = true
			m, ok := p.str(e.v, ff, MaxModuleBytes)
			if !ok {
				continue
			}
			f.Module = m
			if name, ok := strings.CutPrefix(m, BuiltinPrefix); ok {
				if !builtinRe().MatchString(name) {
					p.errf(e.v, ff, "write builtin:NAME with NAME in lowercase letters, digits, _ and -", "builtin module name %q is malformed", name)
					continue
				}
				f.Builtin = name
				continue
			}
			switch {
			case m == "":
				p.errf(e.v, ff, "write builtin:NAME or a path to a .wasm file", "module is empty")
			case hasControl(m):
				p.errf(e.v, ff, "remove control characters", "module path contains a control character")
			case !strings.HasSuffix(m, filterExtension):
				p.errf(e.v, ff, "point module at a .wasm file, or write builtin:NAME", "module %q is neither builtin:NAME nor a .wasm path", m)
			default:
				if filepath.IsAbs(m) {
					f.Path = filepath.Clean(m)
				} else {
					f.Path = filepath.Join(p.base, m)
				}
			}
		case "sha256":
			s, ok := p.str(e.v, ff, 64)
			if !ok {
				continue
			}
			if !sha256Re().MatchString(s) {
				p.errf(e.v, ff, "write the 64 hex digits printed by `sha256sum FILE`", "sha256 must be 64 hex digits")
				continue
			}
			f.SHA256 = strings.ToLower(s)
			shaNode = e.v
		case "capabilities":
			if g, ok := p.globs(e.v, ff, MaxFilterCapGlob); ok {
				f.Capabilities = g
			}
		case "stage":
			if v, ok := p.enum(e.v, ff, StageResult, StageContext); ok {
				f.Stage = v
			}
		case "onError":
			if v, ok := p.enum(e.v, ff, OnErrorClosed, OnErrorOpen); ok {
				f.OnError = v
			}
		case "timeoutMs":
			if v, ok := p.integer(e.v, ff, 1, MaxFilterTimeout); ok {
				f.TimeoutMs = v
			}
		case "timeoutPerMiBMs":
			if v, ok := p.integer(e.v, ff, 1, MaxFilterTimeout); ok {
				f.TimeoutPerMiBMs = v
			}
		case "config":
			var buf bytes.Buffer
			if p.toJSON(&buf, e.v, ff, 0) {
				if !json.Valid(buf.Bytes()) {
					p.errf(e.v, ff, "simplify the config", "config could not be converted to JSON")
					continue
				}
				f.Config = json.RawMessage(buf.Bytes())
			}
		default:
			p.unknown(e.k, field, e.key, filterKeys)
		}
	}
	if !modSeen {
		p.errf(n, field+".module", "add `module: builtin:NAME` or `module: path/to/filter.wasm`", "module is required")
	}
	if f.Builtin != "" && shaNode != nil {
		p.errf(shaNode, field+".sha256", "remove sha256; builtin modules are embedded in the binary", "sha256 applies only to a .wasm path module")
	}
	return f
}

var jsonNumberRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`) })

// toJSON converts a YAML node to JSON. Integers keep their exact value (any
// size, any YAML base); floats keep their source text when it is already a
// JSON number. Nothing passes through float64.
func (p *parser) toJSON(b *bytes.Buffer, n *yaml.Node, field string, depth int) bool {
	if depth >= MaxConfigDepth {
		p.errf(n, field, fmt.Sprintf("nest at most %d levels", MaxConfigDepth), "config nests deeper than %d levels", MaxConfigDepth)
		return false
	}
	switch n.Kind {
	case yaml.AliasNode:
		p.errf(n, field, "write the value out; YAML aliases are not supported", "alias *%s is not supported", n.Value)
		return false
	case yaml.MappingNode:
		pairs, dup := p.pairs(n, field)
		if len(dup) > 0 {
			return false
		}
		if len(pairs)*2 != len(n.Content) {
			return false // a bad key was reported
		}
		b.WriteByte('{')
		for i, e := range pairs {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, e.key)
			b.WriteByte(':')
			if !p.toJSON(b, e.v, joinField(field, e.key), depth+1) {
				return false
			}
		}
		b.WriteByte('}')
		return true
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, it := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if !p.toJSON(b, it, fmt.Sprintf("%s[%d]", field, i), depth+1) {
				return false
			}
		}
		b.WriteByte(']')
		return true
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				p.errf(n, field, "write true or false", "boolean %q is malformed", n.Value)
				return false
			}
			b.WriteString(fmt.Sprint(v))
		case "!!int":
			if jsonNumberRe().MatchString(n.Value) {
				b.WriteString(n.Value)
				return true
			}
			v, ok := yamlInt(n.Value)
			if !ok {
				p.errf(n, field, "write a decimal integer", "integer %q cannot be converted exactly", n.Value)
				return false
			}
			b.WriteString(v.String())
		case "!!float":
			t := strings.ReplaceAll(n.Value, "_", "")
			t = strings.TrimPrefix(t, "+")
			if strings.HasPrefix(t, ".") {
				t = "0" + t
			} else if strings.HasPrefix(t, "-.") {
				t = "-0" + t[1:]
			}
			t = strings.Replace(t, ".e", ".0e", 1)
			t = strings.Replace(t, ".E", ".0E", 1)
			if strings.HasSuffix(t, ".") {
				t += "0"
			}
			if !jsonNumberRe().MatchString(t) {
				p.errf(n, field, "write a finite decimal number, or quote the value", "number %q has no JSON form", n.Value)
				return false
			}
			b.WriteString(t)
		case "!!str", "!!binary", "!!timestamp":
			writeJSONString(b, n.Value)
		default:
			p.errf(n, field, "remove the tag", "YAML tag %s is not supported", n.Tag)
			return false
		}
		return true
	}
	p.errf(n, field, "", "unsupported YAML node")
	return false
}

// yamlInt parses a YAML integer the way the decoder resolved it: optional
// sign, 0x/0o/0b prefixes, legacy leading-0 octal, underscores.
func yamlInt(s string) (*big.Int, bool) {
	t := strings.ReplaceAll(s, "_", "")
	neg := false
	switch {
	case strings.HasPrefix(t, "-"):
		neg, t = true, t[1:]
	case strings.HasPrefix(t, "+"):
		t = t[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(t, "0x"), strings.HasPrefix(t, "0X"):
		base, t = 16, t[2:]
	case strings.HasPrefix(t, "0o"), strings.HasPrefix(t, "0O"):
		base, t = 8, t[2:]
	case strings.HasPrefix(t, "0b"), strings.HasPrefix(t, "0B"):
		base, t = 2, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	if t == "" {
		return nil, false
	}
	v, ok := new(big.Int).SetString(t, base)
	if !ok {
		return nil, false
	}
	if neg {
		v.Neg(v)
	}
	return v, true
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // strings always encode
	b.Write(enc)
}
