package clients

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"sluice/gateway/internal/suggest"
)

// Formats of a client's file.
const (
	FormatJSON = "json" // JSON, comments and trailing commas allowed (JSONC)
	FormatTOML = "toml"
)

// Client is one MCP client whose config sluice reads and writes.
type Client struct {
	Name    string // as typed on the command line: claude-code, cursor ...
	Title   string // as people call it
	Format  string // FormatJSON or FormatTOML
	Key     string // the member holding the servers: mcpServers, servers, mcp_servers
	Project []string
	// user lists the user-level files, most usual first.
	user func(p Places) []string
}

// Places are the directories client files are found relative to.
type Places struct {
	Home    string // the user's home directory
	GOOS    string // runtime.GOOS
	AppData string // Windows %APPDATA%; "" elsewhere
	XDG     string // $XDG_CONFIG_HOME, or "" for ~/.config
}

func (p Places) config() string {
	if p.XDG != "" {
		return p.XDG
	}
	return filepath.Join(p.Home, ".config")
}

// appConfig is the per-user application directory of name on p.GOOS.
func (p Places) appConfig(name string) string {
	switch p.GOOS {
	case "darwin":
		return filepath.Join(p.Home, "Library", "Application Support", name)
	case "windows":
		if p.AppData != "" {
			return filepath.Join(p.AppData, name)
		}
		return filepath.Join(p.Home, "AppData", "Roaming", name)
	default:
		return filepath.Join(p.config(), name)
	}
}

var all = []*Client{
	{Name: "claude-code", Title: "Claude Code", Format: FormatJSON, Key: "mcpServers", Project: []string{".mcp.json"},
		user: func(p Places) []string { return []string{filepath.Join(p.Home, ".claude.json")} }},
	{Name: "claude-desktop", Title: "Claude Desktop", Format: FormatJSON, Key: "mcpServers",
		user: func(p Places) []string {
			return []string{filepath.Join(p.appConfig("Claude"), "claude_desktop_config.json")}
		}},
	{Name: "cursor", Title: "Cursor", Format: FormatJSON, Key: "mcpServers", Project: []string{filepath.Join(".cursor", "mcp.json")},
		user: func(p Places) []string { return []string{filepath.Join(p.Home, ".cursor", "mcp.json")} }},
	{Name: "vscode", Title: "VS Code", Format: FormatJSON, Key: "servers", Project: []string{filepath.Join(".vscode", "mcp.json")},
		user: func(p Places) []string { return []string{filepath.Join(p.appConfig("Code"), "User", "mcp.json")} }},
	{Name: "windsurf", Title: "Windsurf", Format: FormatJSON, Key: "mcpServers",
		user: func(p Places) []string {
			return []string{filepath.Join(p.Home, ".codeium", "windsurf", "mcp_config.json")}
		}},
	{Name: "codex", Title: "Codex", Format: FormatTOML, Key: "mcp_servers",
		user: func(p Places) []string { return []string{filepath.Join(p.Home, ".codex", "config.toml")} }},
	{Name: "gemini", Title: "Gemini CLI", Format: FormatJSON, Key: "mcpServers", Project: []string{filepath.Join(".gemini", "settings.json")},
		user: func(p Places) []string { return []string{filepath.Join(p.Home, ".gemini", "settings.json")} }},
}

var aliases = map[string]string{
	"claude": "claude-code", "claudecode": "claude-code", "claude-desktop-app": "claude-desktop",
	"code": "vscode", "vs-code": "vscode", "gemini-cli": "gemini", "codex-cli": "codex",
}

// Names lists the client names, sorted.
func Names() []string {
	out := make([]string, 0, len(all))
	for _, c := range all {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the client called name (or one of its aliases). An
// unknown name is an error that lists the clients and suggests the
// closest.
func Lookup(name string) (*Client, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		n = a
	}
	for _, c := range all {
		if c.Name == n {
			return c, nil
		}
	}
	msg := fmt.Sprintf("unknown client %q", name)
	if s := suggest.Closest(name, append(Names(), aliasNames()...)); s != "" {
		if a, ok := aliases[s]; ok {
			s = a
		}
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return nil, fmt.Errorf("%w: %s; the clients are %s", ErrUnknownClient, msg, strings.Join(Names(), ", "))
}

func aliasNames() []string {
	out := make([]string, 0, len(aliases))
	for a := range aliases {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// UserFiles lists the client's user-level files, most usual first.
func (c *Client) UserFiles(p Places) []string { return c.user(p) }

// ProjectFiles lists the client's files inside a project root.
func (c *Client) ProjectFiles(root string) []string {
	out := make([]string, 0, len(c.Project))
	for _, rel := range c.Project {
		out = append(out, filepath.Join(root, rel))
	}
	return out
}

// Detect names the client a file belongs to from its path, or nil.
func Detect(path string) *Client {
	slash := filepath.ToSlash(path)
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case base == ".mcp.json" || base == ".claude.json":
		return mustLookup("claude-code")
	case base == "claude_desktop_config.json":
		return mustLookup("claude-desktop")
	case base == "mcp.json" && dir == ".cursor":
		return mustLookup("cursor")
	case base == "mcp.json" && (dir == ".vscode" || strings.HasSuffix(slash, "/User/mcp.json")):
		return mustLookup("vscode")
	case base == "mcp_config.json":
		return mustLookup("windsurf")
	case strings.HasSuffix(base, ".toml"):
		return mustLookup("codex")
	case base == "settings.json" && dir == ".gemini":
		return mustLookup("gemini")
	}
	return nil
}

func mustLookup(name string) *Client {
	c, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return c
}
