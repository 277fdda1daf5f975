package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Caps on what is read.
const (
	MaxFileBytes = 16 << 20 // a client file larger than this is refused (~/.claude.json grows, but not this far)
	MaxEntries   = 512      // servers per file
)

// KV is one env entry or header, in a stable order.
type KV struct{ Key, Value string }

// Transports of an Entry.
const (
	TransportStdio      = ""
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
	TransportAuto       = "auto" // a url without a type: let sluice find out
)

// Entry is one server of a client's file, in neutral form.
type Entry struct {
	Name      string // as the client calls it
	Line      int    // of its name in the file; 0 = unknown (TOML)
	Command   string
	Args      []string
	Env       []KV
	Cwd       string
	URL       string
	Transport string // for a url: TransportStreamable, TransportSSE or TransportAuto
	Headers   []KV
	TimeoutMs int
	// BearerEnv: the variable holding a bearer token (Codex
	// bearer_token_env_var); sent as "Authorization: Bearer ${env:NAME}".
	BearerEnv string
	Disabled  bool
	// Problems are what this entry says that is not imported (unknown or
	// unsupported fields), for the person to look at.
	Problems []string
}

// Source is one file read.
type Source struct {
	Client  *Client
	Path    string
	Entries []Entry
	// Problems are about the file as a whole.
	Problems []string
}

// Read reads path as client c's config. projectDir, for Claude Code's
// ~/.claude.json, selects the project whose local servers are read too
// ("" = only the user-level ones). A missing or unreadable file, or one
// that is not the client's format, is a *FileError.
func Read(c *Client, path string, data []byte, projectDir string) (*Source, error) {
	if len(data) > MaxFileBytes {
		return nil, &FileError{Path: path, Message: fmt.Sprintf("the file is larger than %d MiB", MaxFileBytes>>20), Fix: "import from a smaller file"}
	}
	src := &Source{Client: c, Path: path}
	var err error
	if c.Format == FormatTOML {
		err = src.readTOML(data)
	} else {
		err = src.readJSON(data, projectDir)
	}
	if err != nil {
		return nil, err
	}
	if len(src.Entries) > MaxEntries {
		return nil, &FileError{Path: path, Message: fmt.Sprintf("%d servers; at most %d are imported from one file", len(src.Entries), MaxEntries)}
	}
	return src, nil
}

func (s *Source) readJSON(data []byte, projectDir string) error {
	b := blank(data)
	if len(bytes.TrimSpace(b)) == 0 {
		return nil // an empty file declares nothing
	}
	root, end, err := members(b, 0)
	if err == nil && len(bytes.TrimSpace(b[end+1:])) != 0 {
		err = errSyntax
	}
	if err != nil {
		var probe any
		jerr := json.Unmarshal(b, &probe)
		line := 0
		var se *json.SyntaxError
		if ok := asSyntax(jerr, &se); ok {
			line = lineOf(b, int(se.Offset))
		}
		return &FileError{Path: s.Path, Line: line, Message: "not a JSON object (" + describe(jerr, err) + ")", Fix: "fix the file in " + s.Client.Title + " or with an editor, then import again"}
	}
	if m, ok := find(root, s.Client.Key); ok {
		if err := s.readServers(b, m, ""); err != nil {
			return err
		}
	} else if s.Client.Key == "servers" {
		if m, ok := find(root, "mcpServers"); ok {
			// Older VS Code files and settings.json "mcp" blocks.
			if err := s.readServers(b, m, ""); err != nil {
				return err
			}
		}
	}
	if s.Client.Name == "vscode" {
		if m, ok := find(root, "mcp"); ok && b[m.ValueStart] == '{' {
			inner, _, err := members(b, m.ValueStart)
			if err == nil {
				if sm, ok := find(inner, "servers"); ok {
					if err := s.readServers(b, sm, ""); err != nil {
						return err
					}
				}
			}
		}
	}
	if s.Client.Name == "claude-code" && projectDir != "" {
		if pm, ok := find(root, "projects"); ok && b[pm.ValueStart] == '{' {
			projects, _, err := members(b, pm.ValueStart)
			if err != nil {
				return &FileError{Path: s.Path, Line: lineOf(b, pm.KeyStart), Message: "projects is not an object"}
			}
			for _, p := range projects {
				if filepath.Clean(p.Key) != filepath.Clean(projectDir) || b[p.ValueStart] != '{' {
					continue
				}
				inner, _, err := members(b, p.ValueStart)
				if err != nil {
					continue
				}
				if sm, ok := find(inner, "mcpServers"); ok {
					if err := s.readServers(b, sm, "project "+p.Key); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func asSyntax(err error, target **json.SyntaxError) bool {
	se, ok := err.(*json.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

func describe(errs ...error) string {
	for _, e := range errs {
		if e != nil {
			return e.Error()
		}
	}
	return "unreadable"
}

// readServers reads the server object of member m.
func (s *Source) readServers(b []byte, m member, where string) error {
	line := lineOf(b, m.KeyStart)
	if b[m.ValueStart] != '{' {
		return &FileError{Path: s.Path, Line: line, Message: m.Key + " is not an object of servers", Fix: "it must map each server name to its settings"}
	}
	ms, _, err := members(b, m.ValueStart)
	if err != nil {
		return &FileError{Path: s.Path, Line: line, Message: m.Key + ": " + err.Error()}
	}
	for _, sm := range ms {
		dec := json.NewDecoder(bytes.NewReader(b[sm.ValueStart:sm.ValueEnd]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return &FileError{Path: s.Path, Line: lineOf(b, sm.KeyStart), Message: "server " + strconv.Quote(sm.Key) + ": " + err.Error()}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			s.Problems = append(s.Problems, fmt.Sprintf("line %d: server %q is not an object; skipped", lineOf(b, sm.KeyStart), sm.Key))
			continue
		}
		e := entryOf(s.Client, sm.Key, obj)
		e.Line = lineOf(b, sm.KeyStart)
		if where != "" {
			e.Problems = append(e.Problems, "read from "+where+" in this file")
		}
		s.Entries = append(s.Entries, e)
	}
	return nil
}

func (s *Source) readTOML(data []byte) error {
	var root map[string]any
	if _, err := toml.Decode(string(data), &root); err != nil {
		line := 0
		if pe, ok := err.(toml.ParseError); ok {
			line = pe.Position.Line
		}
		return &FileError{Path: s.Path, Line: line, Message: "not valid TOML: " + firstLine(err.Error()), Fix: "fix the file, then import again"}
	}
	raw, ok := root[s.Client.Key]
	if !ok {
		return nil
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return &FileError{Path: s.Path, Message: s.Client.Key + " is not a table of servers", Fix: "write each server as [" + s.Client.Key + ".NAME]"}
	}
	for _, name := range sortedKeys(servers) {
		obj, ok := servers[name].(map[string]any)
		if !ok {
			s.Problems = append(s.Problems, fmt.Sprintf("server %q is not a table; skipped", name))
			continue
		}
		s.Entries = append(s.Entries, entryOf(s.Client, name, obj))
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// notImported are fields the clients define that sluice has no
// counterpart for; they are reported, with why.
var notImported = map[string]string{
	"envFile":             "sluice reads no env files; put the variables in env or your environment",
	"env_vars":            "list the variables under passEnv instead",
	"disabledTools":       "tool subsets are not imported; choose the tools in sluice",
	"disabled_tools":      "tool subsets are not imported; choose the tools in sluice",
	"enabled_tools":       "tool subsets are not imported; choose the tools in sluice",
	"includeTools":        "tool subsets are not imported; choose the tools in sluice",
	"excludeTools":        "tool subsets are not imported; choose the tools in sluice",
	"alwaysAllow":         "approvals are not imported; use approve in sluice",
	"autoApprove":         "approvals are not imported; use approve in sluice",
	"trust":               "approvals are not imported; use approve in sluice",
	"startup_timeout_sec": "sluice bounds the handshake itself",
	"startup_timeout_ms":  "sluice bounds the handshake itself",
	"oauth":               "run 'sluice auth' for the server after importing",
	"authProviderType":    "run 'sluice auth' for the server after importing",
	"dev":                 "development options are not imported",
	"description":         "",
	"gallery":             "",
	"version":             "",
}

// entryOf converts one server object (JSON with numbers kept, or TOML).
func entryOf(c *Client, name string, obj map[string]any) Entry {
	e := Entry{Name: name}
	kind := ""
	if t, ok := obj["type"].(string); ok {
		kind = strings.ToLower(t)
	}
	if t, ok := obj["transport"].(string); ok && kind == "" {
		kind = strings.ToLower(t)
	}
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		switch k {
		case "type", "transport":
			switch kind {
			case "stdio", "local", "http", "streamable-http", "streamablehttp", "streamable_http", "sse", "remote":
			default:
				e.Problems = append(e.Problems, fmt.Sprintf("%s %q is not known; read as %s", k, kind, map[bool]string{true: "a stdio server", false: "a remote server"}[obj["url"] == nil]))
			}
		case "command":
			e.Command = str(&e, k, v)
		case "args":
			e.Args = strList(&e, k, v)
		case "env":
			e.Env = strMap(&e, k, v)
		case "cwd":
			e.Cwd = str(&e, k, v)
		case "url", "serverUrl", "httpUrl":
			if e.URL != "" {
				e.Problems = append(e.Problems, k+" given besides another url; the first is kept")
				continue
			}
			e.URL = str(&e, k, v)
			switch {
			case k == "httpUrl":
				e.Transport = TransportStreamable
			case k == "url" && kind == "" && (c.Name == "gemini" || isGemini(obj)):
				e.Transport = TransportSSE
			}
		case "headers", "http_headers":
			e.Headers = append(e.Headers, strMap(&e, k, v)...)
		case "env_http_headers":
			for _, kv := range strMap(&e, k, v) {
				e.Headers = append(e.Headers, KV{Key: kv.Key, Value: "${env:" + kv.Value + "}"})
			}
		case "bearer_token_env_var":
			e.BearerEnv = str(&e, k, v)
		case "timeout":
			e.TimeoutMs = num(&e, k, v, 1)
		case "tool_timeout_sec":
			e.TimeoutMs = num(&e, k, v, 1000)
		case "disabled":
			if b, ok := v.(bool); ok && b {
				e.Disabled = true
			}
		case "enabled":
			if b, ok := v.(bool); ok && !b {
				e.Disabled = true
			}
		default:
			if why, ok := notImported[k]; ok {
				if why != "" {
					e.Problems = append(e.Problems, fmt.Sprintf("%s is not imported: %s", k, why))
				}
				continue
			}
			e.Problems = append(e.Problems, fmt.Sprintf("unknown field %s: not imported", k))
		}
	}
	if e.URL != "" && e.Transport == "" {
		switch kind {
		case "sse":
			e.Transport = TransportSSE
		case "http", "streamable-http", "streamablehttp", "streamable_http":
			e.Transport = TransportStreamable
		default:
			e.Transport = TransportAuto
		}
	}
	return e
}

// isGemini: Gemini CLI's url means SSE (httpUrl is streamable HTTP); it
// has no type field, so a url-only entry with Gemini's other fields is
// read that way. Without them, the transport is left to sluice.
func isGemini(obj map[string]any) bool {
	for _, k := range []string{"trust", "includeTools", "excludeTools", "timeout"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

func str(e *Entry, k string, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	e.Problems = append(e.Problems, k+" is not a string; not imported")
	return ""
}

func strList(e *Entry, k string, v any) []string {
	l, ok := v.([]any)
	if !ok {
		e.Problems = append(e.Problems, k+" is not a list; not imported")
		return nil
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, str(e, k+" item", x))
	}
	return out
}

func strMap(e *Entry, k string, v any) []KV {
	m, ok := v.(map[string]any)
	if !ok {
		e.Problems = append(e.Problems, k+" is not an object; not imported")
		return nil
	}
	out := make([]KV, 0, len(m))
	for _, key := range sortedKeys(m) {
		out = append(out, KV{Key: key, Value: str(e, k+"."+key, m[key])})
	}
	return out
}

func num(e *Entry, k string, v any, scale float64) int {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			e.Problems = append(e.Problems, k+" is not a number; not imported")
			return 0
		}
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		e.Problems = append(e.Problems, k+" is not a number; not imported")
		return 0
	}
	ms := f * scale
	if ms <= 0 || ms > math.MaxInt32 {
		e.Problems = append(e.Problems, k+" is out of range; not imported")
		return 0
	}
	return int(ms)
}

func unquote(q []byte) (string, error) {
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}
