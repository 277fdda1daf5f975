package gateway

// Client configs: 'sluice import' reads other MCP clients' server lists
// into sluice declarations, 'sluice install' adds sluice to a client's
// config and 'sluice uninstall' restores it (package gateway/clients owns
// the formats; this file decides where things go and what is declared).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"sluice/gateway/clients"
	"sluice/gateway/config"
	"sluice/gateway/internal/suggest"
)

// Suggest returns the candidate closest to s when it is likely a typo
// of it ("" otherwise): for "did you mean" in messages.
func Suggest(s string, candidates []string) string { return suggest.Closest(s, candidates) }

// ClientNames lists the clients import and install know.
func ClientNames() []string { return clients.Names() }

func (g *Gateway) places() clients.Places {
	home := g.opts.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	xdg := g.opts.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(xdg) {
		xdg = ""
	}
	return clients.Places{Home: home, GOOS: runtime.GOOS, AppData: g.opts.Getenv("APPDATA"), XDG: xdg}
}

// ImportRequest says what to import.
type ImportRequest struct {
	File    string // a client's config file; "" = every known file found
	Client  string // the client (--from); "" = from File's name
	Project bool   // import a repository's file into the project's .sluice/mcp.yaml
	Write   bool   // write the declarations (else only show them)
	// Progress, when set, is told about each file read.
	Progress func(msg string)
}

// ImportedServer is one entry and what became of it.
type ImportedServer struct {
	ID      string   `json:"id,omitempty"`
	From    string   `json:"from"`   // the entry's name in the client's file
	Client  string   `json:"client"` // the client
	File    string   `json:"file"`
	Line    int      `json:"line,omitempty"`
	SetVars []string `json:"setVars,omitempty"` // variables to set before it starts
	Notes   []string `json:"notes,omitempty"`
	Skipped string   `json:"skipped,omitempty"` // why it was not imported
}

// ImportResult is what an import found, and wrote.
type ImportResult struct {
	Target   string           `json:"target"` // the sluice file the declarations go to
	Scope    string           `json:"scope"`
	Read     []string         `json:"read"` // the client files read
	Servers  []ImportedServer `json:"servers"`
	Problems []string         `json:"problems,omitempty"` // about whole files
	Text     string           `json:"text"`               // the declarations added
	Diff     string           `json:"diff,omitempty"`
	Written  bool             `json:"written"`
	Backup   string           `json:"backup,omitempty"` // the target as it was
	Created  bool             `json:"created,omitempty"`
}

func (g *Gateway) clientSources(req ImportRequest, root string) ([]*clients.Source, []string, error) {
	type cand struct {
		c    *clients.Client
		path string
	}
	var cands []cand
	explicit := req.File != ""
	switch {
	case explicit:
		var c *clients.Client
		if req.Client != "" {
			var err error
			if c, err = clients.Lookup(req.Client); err != nil {
				return nil, nil, lookupErr(err)
			}
		} else if c = clients.Detect(req.File); c == nil {
			return nil, nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("cannot tell which client %s belongs to; name it with --from (%s)", req.File, strings.Join(clients.Names(), ", "))}
		}
		cands = append(cands, cand{c, req.File})
	default:
		var list []*clients.Client
		if req.Client != "" {
			c, err := clients.Lookup(req.Client)
			if err != nil {
				return nil, nil, lookupErr(err)
			}
			list = []*clients.Client{c}
		} else {
			for _, n := range clients.Names() {
				c, _ := clients.Lookup(n)
				list = append(list, c)
			}
		}
		for _, c := range list {
			paths := c.UserFiles(g.places())
			if req.Project {
				paths = c.ProjectFiles(root)
			}
			for _, p := range paths {
				cands = append(cands, cand{c, p})
			}
		}
	}
	var srcs []*clients.Source
	var read []string
	for _, cd := range cands {
		data, err := config.ReadFileCapped(cd.path, clients.MaxFileBytes)
		if err != nil {
			if !explicit && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("cannot read %s: %v", cd.path, err)}
		}
		src, err := clients.Read(cd.c, cd.path, data, root)
		if err != nil {
			return nil, nil, &Error{Kind: KindBadInput, Message: err.Error(), Err: err}
		}
		if req.Progress != nil {
			req.Progress(fmt.Sprintf("read %s: %s (%d %s)", cd.c.Title, cd.path, len(src.Entries), map[bool]string{true: "server", false: "servers"}[len(src.Entries) == 1]))
		}
		read = append(read, cd.path)
		srcs = append(srcs, src)
	}
	if len(srcs) == 0 {
		where := "the user files of " + strings.Join(clients.Names(), ", ")
		if req.Project {
			where = "the project files (.mcp.json, .cursor/mcp.json, .vscode/mcp.json, .gemini/settings.json) in " + root
		}
		if req.Client != "" {
			where = req.Client + "'s files"
		}
		return nil, nil, &Error{Kind: KindBadInput, Message: "no client config found in " + where + "; name a file: sluice import FILE"}
	}
	return srcs, read, nil
}

// insideProject refuses a project file that resolves (through a symlink
// the repository ships as .sluice or .sluice/mcp.yaml) outside the project
// root: written there, the repository's servers would not be project
// declarations — in the user file they are trusted by authorship and
// launch without 'sluice trust'.
func insideProject(root, file string) error {
	croot, err := filepath.EvalSymlinks(root)
	if err != nil {
		croot = filepath.Clean(root)
	}
	p, rest := file, ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			p = filepath.Join(r, rest)
			break
		}
		if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return &Error{Kind: KindBadInput, Message: fmt.Sprintf("the project file %s goes through the symlink %s, which leads nowhere; sluice writes project declarations only to a file inside the project", file, p)}
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
	if p != croot && !strings.HasPrefix(p, croot+string(filepath.Separator)) {
		return &Error{Kind: KindBadInput, Message: fmt.Sprintf("the project file %s resolves to %s, outside the project %s (through a symlink); sluice writes project declarations only inside the project, since anywhere else they would not be project servers that wait for 'sluice trust' (remove the link, or import without --project)", file, p, croot)}
	}
	return nil
}

// Import reads client configs and turns their servers into declarations
// for the user file (or, with Project, the project file). Without Write it
// only says what it would add. Secrets are never copied: they become
// ${env:NAME} references named in the result.
func (g *Gateway) Import(req ImportRequest) (*ImportResult, error) {
	l := g.reload()
	root := l.ProjectRoot
	if root == "" {
		root = g.opts.Cwd
	}
	target, scope := l.UserFile, config.ScopeUser
	if target == "" {
		target = g.UserFile()
	}
	if req.Project {
		target, scope = filepath.Join(root, config.ProjectDirName, config.ProjectFileName), config.ScopeProject
		if l.Foreign != nil {
			// Neither its client files nor its declarations are this user's.
			return nil, &Error{Kind: KindBadInput, Message: target + ": " + config.ForeignEditMessage(*l.Foreign,
				"import in a directory of your own; to declare a server in that project on purpose, use 'sluice add ID --project --project-dir DIR -- COMMAND'")}
		}
		if err := insideProject(root, target); err != nil {
			return nil, err
		}
	}
	srcs, read, err := g.clientSources(req, root)
	if err != nil {
		return nil, err
	}
	res := &ImportResult{Target: target, Scope: string(scope), Read: read}
	declared := map[string]bool{}
	for _, s := range l.Servers {
		if s.Scope == scope {
			declared[s.ID] = true
		}
	}
	seen := map[string]string{} // id -> fingerprint of what was imported under it
	var all []clients.Decl
	var srcOf []*clients.Source
	for _, src := range srcs {
		res.Problems = append(res.Problems, prefixAll(src.Path+": ", src.Problems)...)
		ws := ""
		if req.Project {
			ws = "."
		} else if src.Path != "" && (strings.HasPrefix(src.Path, root+string(filepath.Separator))) {
			ws = root
		}
		removeFlags := ""
		if req.Project {
			removeFlags = " --project"
		}
		decls := clients.Convert(src, clients.ConvertOptions{Workspace: ws, RemoveFlags: removeFlags, Taken: func(id string) string {
			if declared[id] {
				return target
			}
			return ""
		}})
		for _, d := range decls {
			if d.Skip == "" {
				fp := fingerprint(d)
				if prev, ok := seen[d.ID]; ok {
					if prev == fp {
						d.Skip = "the same server was already imported from another file; nothing to do"
					} else {
						base := d.ID
						for n := 2; seen[d.ID] != ""; n++ {
							d.ID = fmt.Sprintf("%s-%d", strings.TrimRight(base[:min(len(base), 29)], "-_"), n)
						}
						d.Notes = append(d.Notes, fmt.Sprintf("named %s: another file has a different server called %s", d.ID, base))
					}
				}
				if d.Skip == "" {
					seen[d.ID] = fp
				}
			}
			res.Servers = append(res.Servers, ImportedServer{ID: d.ID, From: d.From, Client: src.Client.Name, File: src.Path, Line: d.Line, SetVars: d.SetVars, Notes: d.Notes, Skipped: d.Skip})
			all = append(all, d)
			srcOf = append(srcOf, src)
		}
	}
	render := func(indent, unit string) string {
		var b strings.Builder
		for i, d := range all {
			b.WriteString(clients.Render([]clients.Decl{d}, srcOf[i], indent, unit))
		}
		return b.String()
	}
	res.Text = render("  ", "  ")
	if strings.TrimSpace(res.Text) == "" {
		return res, nil
	}
	base := filepath.Dir(target)
	if scope == config.ScopeProject {
		base = root
	}
	ids := []string{}
	for _, d := range all {
		if d.Skip == "" {
			ids = append(ids, d.ID)
		}
	}
	// The plan shows the declarations as 'sluice servers' would: a value
	// import copies (a url's key in args, a database url's password)
	// is hidden there too.
	edit, err := config.AppendServers(config.EditTarget{File: target, Scope: scope, Base: base, Discovered: scope == config.ScopeProject && g.opts.Project == "", Shown: shownMask,
		Backup: filepath.Join(g.configDir, "backups", fmt.Sprintf("%s-%s.%d.bak", scope, config.UserFileName, g.opts.now().UnixNano()))}, render, ids...)
	if err != nil {
		kind := KindBadInput // the file as it is cannot take the servers
		if errors.Unwrap(err) != nil {
			kind = KindGateway // it cannot be read
		}
		return nil, &Error{Kind: kind, Message: err.Error(), Err: err}
	}
	res.Created = edit.Created
	res.Diff = edit.Diff(clients.Mask)
	if mask := edit.LineMask(clients.Mask); mask != nil {
		lines := strings.SplitAfter(res.Text, "\n")
		for i, l := range lines {
			nl := strings.HasSuffix(l, "\n")
			lines[i] = mask(strings.TrimSuffix(l, "\n"))
			if nl {
				lines[i] += "\n"
			}
		}
		res.Text = strings.Join(lines, "")
	}
	if !req.Write {
		return res, nil
	}
	if err := edit.Write(); err != nil {
		return nil, &Error{Kind: KindGateway, Message: err.Error(), Err: err}
	}
	if !edit.Created {
		res.Backup = edit.Target.Backup
	}
	res.Written = true
	return res, nil
}

func prefixAll(p string, ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, p+s)
	}
	return out
}

func fingerprint(d clients.Decl) string {
	return fmt.Sprintf("%q %q %q %q %q %q %q", d.Command, d.Args, d.Cwd, d.Env, d.URL, d.Transport, d.Headers)
}

// InstallRequest says which client gets sluice.
type InstallRequest struct {
	Client string
	File   string // the client's config; "" = its usual user file
	// Replace removes the client's entries that sluice now declares
	// (same id and the same command or url).
	Replace bool
	// Executable is the sluice program the client runs; Args its
	// arguments (default: serve).
	Executable string
	Args       []string
}

// InstallPlan is an install or uninstall to show, then Apply.
type InstallPlan struct {
	Client  string   `json:"client"`
	File    string   `json:"file"`
	Diff    string   `json:"diff,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Kept    []string `json:"kept,omitempty"` // entries --replace left, with why
	Already string   `json:"already,omitempty"`
	Forget  bool     `json:"forget,omitempty"`
	plan    *clients.Plan
}

// Apply writes the plan.
func (p *InstallPlan) Apply() error {
	if err := p.plan.Apply(); err != nil {
		return &Error{Kind: KindGateway, Message: err.Error(), Err: err}
	}
	return nil
}

func (g *Gateway) clientFile(name, file string) (*clients.Client, string, error) {
	c, err := clients.Lookup(name)
	if err != nil {
		return nil, "", lookupErr(err)
	}
	if file == "" {
		file = c.UserFiles(g.places())[0]
	}
	return c, file, nil
}

// lookupErr is the error of a client name clients.Lookup does not know,
// said once ("unknown client "x" (did you mean ...?); the clients are
// ..."), not behind the sentinel's own text.
func lookupErr(err error) error {
	return &Error{Kind: KindBadInput, Message: strings.TrimPrefix(err.Error(), clients.ErrUnknownClient.Error()+": "), Err: err}
}

func (g *Gateway) installState() string { return filepath.Join(g.configDir, "clients") }

// PlanInstall computes adding sluice to a client's config.
func (g *Gateway) PlanInstall(req InstallRequest) (*InstallPlan, error) {
	c, file, err := g.clientFile(req.Client, req.File)
	if err != nil {
		return nil, err
	}
	exe := req.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, &Error{Kind: KindGateway, Message: "cannot tell where the sluice program is: " + err.Error()}
		}
	}
	args := req.Args
	if len(args) == 0 {
		args = []string{"serve"}
	}
	srv := clients.Server{Command: exe, Args: args}
	for _, k := range []string{"SLUICE_HOME", "SLUICE_CACHE_DIR"} {
		if v := g.opts.Getenv(k); v != "" {
			srv.Env = append(srv.Env, clients.KV{Key: k, Value: v})
		}
	}
	out := &InstallPlan{Client: c.Name}
	var remove []string
	if req.Replace {
		remove, out.Kept, err = g.servedThrough(c, file)
		if err != nil {
			return nil, err
		}
	}
	p, err := clients.PlanInstall(clients.InstallOptions{Client: c, File: file, Server: srv, Remove: remove, StateDir: g.installState(), Now: g.opts.now()})
	if err != nil {
		kind := KindBadInput
		if errors.Is(err, clients.ErrChanged) {
			kind = KindRefused
		}
		return nil, &Error{Kind: kind, Message: err.Error(), Err: err}
	}
	out.File, out.Diff, out.Removed, out.Already, out.plan = p.File, p.Diff, p.Removed, p.Already, p
	return out, nil
}

// servedThrough lists the client's entries that sluice now declares:
// same id (as import names it) and the same command or url.
func (g *Gateway) servedThrough(c *clients.Client, file string) (remove, kept []string, err error) {
	data, rerr := config.ReadFileCapped(file, clients.MaxFileBytes)
	if rerr != nil {
		if errors.Is(rerr, os.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("cannot read %s: %v", file, rerr)}
	}
	src, rerr := clients.Read(c, file, data, "")
	if rerr != nil {
		return nil, nil, &Error{Kind: KindBadInput, Message: rerr.Error(), Err: rerr}
	}
	l := g.reload()
	for _, e := range src.Entries {
		if e.Name == clients.EntryName {
			continue
		}
		d, ok := l.Server(clients.ID(e.Name))
		switch {
		case !ok:
			kept = append(kept, fmt.Sprintf("%s: not declared in sluice (run 'sluice import --from %s --write' first)", e.Name, c.Name))
		case e.URL != "" && d.URL == e.URL, e.Command != "" && d.URL == "" && filepath.Base(d.Command) == filepath.Base(e.Command):
			remove = append(remove, e.Name)
		default:
			kept = append(kept, fmt.Sprintf("%s: sluice's %s runs something else", e.Name, d.ID))
		}
	}
	sort.Strings(remove)
	return remove, kept, nil
}

// PlanUninstall computes restoring a client's config as it was before
// 'sluice install' wrote it; forget only drops the install record.
func (g *Gateway) PlanUninstall(client, file string, forget bool) (*InstallPlan, error) {
	c, file, err := g.clientFile(client, file)
	if err != nil {
		return nil, err
	}
	p, err := clients.PlanUninstall(c, file, g.installState(), forget)
	if err != nil {
		kind := KindBadInput
		if errors.Is(err, clients.ErrChanged) {
			kind = KindRefused
		}
		return nil, &Error{Kind: kind, Message: err.Error(), Err: err}
	}
	return &InstallPlan{Client: c.Name, File: p.File, Diff: p.Diff, Already: p.Already, Forget: p.Forgetting(), plan: p}, nil
}
