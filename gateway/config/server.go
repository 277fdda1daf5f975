package config

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Scope says where a declaration comes from.
type Scope string

// Scopes.
const (
	ScopeUser    Scope = "user"    // <config dir>/mcp.yaml: trusted by authorship
	ScopeProject Scope = "project" // <project root>/.sluice/mcp.yaml: needs a trust record
)

// Action classes (user scope only; project servers get theirs from the
// trust record).
const (
	ActionRead    = "read"
	ActionExecute = "execute"
	ActionUnknown = "unknown"
)

// Stdout noise policies.
const (
	NoiseIgnore = "ignore" // non-JSON stdout lines are set aside and logged (default)
	NoiseFatal  = "fatal"  // a non-JSON stdout line fails the server
)

// Server is one validated declaration.
type Server struct {
	ID     string
	Scope  Scope
	File   string // the declaring file
	Line   int    // position of the id key
	Column int

	Command string // absolute path or bare name; never a shell
	// Program is Command resolved to an absolute path on the gateway's
	// PATH when the declarations were loaded ("" when not found, and
	// after Parse alone). It is not part of the digest: trust records
	// bind it separately, so a different program behind the same name
	// makes a record stale.
	Program string
	Args    []string          // never nil
	Cwd     string            // as written ("" when absent)
	Dir     string            // resolved absolute working directory
	Root    string            // containment root for Dir (symlink-free)
	Env     map[string]string // as written: ${env:NAME} references unexpanded; never nil
	PassEnv []string          // names copied from the gateway's environment; never nil

	TimeoutMs    int    // per call; 0 = the gateway's default
	ActionClass  string // read|execute|unknown; "" = none set (project scope: the trust record decides; user scope: tool annotations may)
	StdoutNoise  string // NoiseIgnore or NoiseFatal
	MaxLineBytes int    // 0 = the client's default
	OnToolChange string // ToolChangeHold (also ""), ToolChangeWarn or ToolChangeAccept; see toolchange.go

	// Remote servers (url instead of command); see remote.go.
	URL          string            // the MCP endpoint or SSE URL, as written
	Headers      map[string]string // as written: ${env:NAME} references unexpanded; never nil for url servers
	Transport    string            // auto|streamable-http|sse; "" for local servers
	OAuth        *OAuth            // nil: no oauth block
	AllowPrivate bool              // user scope only: the SSRF guard permits loopback/private targets

	// CLI is set when the server is a cli block: its tools are argv
	// templates the gateway runs itself, and Command and Args are empty.
	CLI *CLI

	// Tools narrows which of the server's tools are exposed (not bound by
	// the digest: it only ever narrows).
	Tools ToolSubset
	// Expose lists tool-name globs served as direct tools beside the
	// gateway tools (see expose.go); not bound by the digest: it changes
	// how a tool is listed, never what the server may do.
	Expose []string
	// Disabled (enabled: false) keeps the declaration without loading it:
	// Load lists it in Loaded.Disabled, not in Loaded.Servers.
	Disabled bool

	// Digest is the SHA-256 (hex) of the canonical declaration; see Digest.
	Digest string
}

// DigestFields lists the fields bound by the declaration digest, in the
// order they are encoded.
var DigestFields = []string{"id", "command", "args", "cwd", "env", "passEnv", "timeoutMs"}

// Digest encoding tags. Changing the encoding means changing the version,
// which makes every existing trust record stale (the safe direction).
const (
	digestTag = "sluice/declaration/v1"
	fieldTag  = "sluice/declaration-field/v1"
)

// encField appends the canonical encoding of one bound field: every string
// is length-prefixed (uvarint), lists are count-prefixed, maps are
// count-prefixed with keys sorted, integers are decimal strings. The
// encoding is unambiguous for arbitrary bytes, so no two different
// declarations share it.
func (s *Server) encField(b []byte, name string) []byte {
	str := func(b []byte, v string) []byte {
		b = binary.AppendUvarint(b, uint64(len(v)))
		return append(b, v...)
	}
	b = str(b, name)
	switch name {
	case "id":
		b = str(b, s.ID)
	case "command":
		b = str(b, s.Command)
	case "args":
		b = binary.AppendUvarint(b, uint64(len(s.Args)))
		for _, a := range s.Args {
			b = str(b, a)
		}
	case "cwd":
		b = str(b, s.Cwd)
	case "env":
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = str(str(b, k), s.Env[k])
		}
	case "passEnv":
		b = binary.AppendUvarint(b, uint64(len(s.PassEnv)))
		for _, n := range s.PassEnv {
			b = str(b, n)
		}
	case "timeoutMs":
		b = str(b, strconv.Itoa(s.TimeoutMs))
	case "cli":
		b = str(b, s.CLI.encode())
	default:
		b = s.encRemote(b, name)
	}
	return b
}

// digestFields is DigestFields, plus "cli" for a cli server. A server
// without a cli block encodes exactly as before the block existed, so its
// trust records stay valid.
func (s *Server) digestFields() []string {
	if s.URL != "" {
		return append(append([]string(nil), DigestFields...), remoteDigestFields...)
	}
	if s.CLI == nil {
		return DigestFields
	}
	return append(append([]string(nil), DigestFields...), "cli")
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ComputeDigest returns the declaration digest: SHA-256 (hex) over the
// canonical encoding of id, command, args, cwd (as written), env
// (references unexpanded), passEnv, timeoutMs and, for a cli server, the
// whole cli block (every tool, everything it declares); for a url server
// also url, headers (names canonical, values as written: references
// unexpanded), transport and the whole oauth block. Key order and YAML
// formatting do not affect it, nil and empty collections are the same, and
// actionClass, stdoutNoise, maxLineBytes and allowPrivate (user scope
// only) are not bound (they change how the gateway treats the server, not
// what runs or where it connects).
func (s *Server) ComputeDigest() string {
	b := append([]byte(nil), digestTag...)
	b = append(b, 0)
	for _, f := range s.digestFields() {
		b = s.encField(b, f)
	}
	return sum(b)
}

// FieldDigests returns one digest per bound field (keys: DigestFields, and
// "cli" for a cli server), so
// a trust check can name the fields that changed.
func (s *Server) FieldDigests() map[string]string {
	fields := s.digestFields()
	out := make(map[string]string, len(fields))
	for _, f := range fields {
		b := append([]byte(nil), fieldTag...)
		b = append(b, 0)
		out[f] = sum(s.encField(b, f))
	}
	return out
}

// ExpandEnv expands ${env:NAME} references in the server's env. Errors name
// the server, the key and the variable, never a value.
func (s *Server) ExpandEnv(lookup func(string) (string, bool)) (map[string]string, error) {
	out, err := ExpandEnv(s.Env, lookup)
	if e, ok := err.(*EnvRefError); ok {
		e.Server = s.ID
	}
	return out, err
}

// ExpandEnv returns env with every ${env:NAME} reference replaced by the
// value lookup returns for NAME; text around references is kept. "$${" is a
// literal "${". A missing variable is an *EnvRefError wrapping ErrEnvMissing;
// keys are processed in sorted order so the reported error is deterministic.
func ExpandEnv(env map[string]string, lookup func(string) (string, bool)) (map[string]string, error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(env))
	for _, k := range keys {
		v, err := expandValue(env[k], lookup)
		if err != nil {
			err.Key = k
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// scanRefs finds the ${env:NAME} references in v. It returns the literal
// segments interleaved with references through emit; a malformed "${" is an
// error.
func scanRefs(v string, lit func(string), ref func(string)) error {
	i := 0
	for i < len(v) {
		j := strings.IndexByte(v[i:], '$')
		if j < 0 {
			lit(v[i:])
			return nil
		}
		j += i
		lit(v[i:j])
		switch {
		case strings.HasPrefix(v[j:], "$${"):
			lit("${")
			i = j + 3
		case strings.HasPrefix(v[j:], "${"):
			end := strings.IndexByte(v[j:], '}')
			if end < 0 {
				return fmt.Errorf("%w: unterminated %q at byte %d; write ${env:NAME}, or $${ for a literal ${", ErrEnvSyntax, "${", j)
			}
			body := v[j+2 : j+end]
			name, ok := strings.CutPrefix(body, "env:")
			if !ok || !envNameRe().MatchString(name) {
				return fmt.Errorf("%w: the reference at byte %d is not ${env:NAME} with NAME matching %s; write $${ for a literal ${", ErrEnvSyntax, j, envNameRe().String())
			}
			ref(name)
			i = j + end + 1
		default:
			lit("$")
			i = j + 1
		}
	}
	return nil
}

func expandValue(v string, lookup func(string) (string, bool)) (string, *EnvRefError) {
	var b strings.Builder
	var missing string
	err := scanRefs(v, func(s string) { b.WriteString(s) }, func(name string) {
		if missing != "" {
			return
		}
		val, ok := lookup(name)
		if !ok {
			missing = name
			return
		}
		b.WriteString(val)
	})
	if err != nil {
		return "", &EnvRefError{Err: err}
	}
	if missing != "" {
		return "", &EnvRefError{Var: missing, Err: ErrEnvMissing}
	}
	return b.String(), nil
}

// EnvRefs returns the variable names referenced by the server's env, sorted
// and deduplicated.
func (s *Server) EnvRefs() []string {
	seen := map[string]bool{}
	for _, v := range s.Env {
		_ = scanRefs(v, func(string) {}, func(n string) { seen[n] = true })
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Grant is one gateway variable a server receives: referenced as
// ${env:Var} in env key As, or copied by passEnv (As == Var).
type Grant struct {
	Var string `json:"var"` // the gateway's variable
	As  string `json:"as"`  // the name the server sees it under
	Via string `json:"via"` // "env", "passEnv" or "header" (a remote server's header value)
}

// Grants lists every gateway variable the server receives: env references
// (keys sorted, references in order of appearance) then passEnv names. It
// names variables only, never values.
func (s *Server) Grants() []Grant {
	var out []Grant
	for _, k := range sortedKeys(s.Env) {
		seen := map[string]bool{}
		_ = scanRefs(s.Env[k], func(string) {}, func(n string) {
			if !seen[n] {
				seen[n] = true
				out = append(out, Grant{Var: n, As: k, Via: "env"})
			}
		})
	}
	for _, n := range s.PassEnv {
		out = append(out, Grant{Var: n, As: n, Via: "passEnv"})
	}
	for _, k := range sortedKeys(s.Headers) {
		seen := map[string]bool{}
		_ = scanRefs(s.Headers[k], func(string) {}, func(n string) {
			if !seen[n] {
				seen[n] = true
				out = append(out, Grant{Var: n, As: k, Via: "header"})
			}
		})
	}
	return out
}
