package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
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

	Command string            // absolute path or bare name; never a shell
	Args    []string          // never nil
	Cwd     string            // as written ("" when absent)
	Dir     string            // resolved absolute working directory
	Root    string            // containment root for Dir (symlink-free)
	Env     map[string]string // as written: ${env:NAME} references unexpanded; never nil
	PassEnv []string          // names copied from the gateway's environment; never nil

	TimeoutMs    int    // per call; 0 = the gateway's default
	ActionClass  string // read|execute|unknown ("" in project scope: the trust record decides)
	StdoutNoise  string // NoiseIgnore or NoiseFatal
	MaxLineBytes int    // 0 = the client's default

	// Digest is the SHA-256 (hex) of the canonical declaration; see Digest.
	Digest string
}

// DigestFields lists the fields bound by the declaration digest, in the
// order FieldDigests reports them.
var DigestFields = []string{"id", "command", "args", "cwd", "env", "passEnv", "timeoutMs"}

// canonical is the digest encoding. encoding/json writes struct fields in
// declaration order and map keys sorted, so the bytes depend only on values.
type canonical struct {
	V         int               `json:"v"`
	ID        string            `json:"id"`
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	PassEnv   []string          `json:"passEnv"`
	TimeoutMs int               `json:"timeoutMs"`
}

func (s *Server) canonical() canonical {
	c := canonical{V: 1, ID: s.ID, Command: s.Command, Args: s.Args, Cwd: s.Cwd, Env: s.Env, PassEnv: s.PassEnv, TimeoutMs: s.TimeoutMs}
	if c.Args == nil {
		c.Args = []string{}
	}
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	if c.PassEnv == nil {
		c.PassEnv = []string{}
	}
	return c
}

func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only strings, ints, slices and string maps are encoded: cannot fail.
		panic(fmt.Sprintf("config: digest encoding: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ComputeDigest returns the declaration digest: SHA-256 over canonical JSON
// of id, command, args, cwd (as written), env (unexpanded), passEnv and
// timeoutMs. Key order and YAML formatting do not affect it; actionClass,
// stdoutNoise and maxLineBytes do not either (they do not change what runs).
func (s *Server) ComputeDigest() string { return hashJSON(s.canonical()) }

// FieldDigests returns one digest per bound field (keys: DigestFields), so a
// trust check can name the fields that changed.
func (s *Server) FieldDigests() map[string]string {
	c := s.canonical()
	vals := map[string]any{
		"id": c.ID, "command": c.Command, "args": c.Args, "cwd": c.Cwd,
		"env": c.Env, "passEnv": c.PassEnv, "timeoutMs": c.TimeoutMs,
	}
	out := make(map[string]string, len(vals))
	for k, v := range vals {
		out[k] = hashJSON(map[string]any{"v": 1, "field": k, "value": v})
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
			if !ok || !envNameRe.MatchString(name) {
				return fmt.Errorf("%w: the reference at byte %d is not ${env:NAME} with NAME matching %s; write $${ for a literal ${", ErrEnvSyntax, j, envNameRe.String())
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
