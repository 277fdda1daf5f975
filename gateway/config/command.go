package config

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"sluice/gateway/proc"
)

// perlModuleRe is a module name for perl -M/-m, with an optional import
// list; anything else (perl -M'x;system(...)') is code.
var perlModuleRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z0-9_]+)*(=[A-Za-z0-9_:,]*)?$`)
})

// normalizeProgram is the name a command is compared by: the lowercased
// basename without a Windows executable extension.
func normalizeProgram(c string) string {
	c = filepath.ToSlash(c)
	if windowsPaths {
		c = strings.ReplaceAll(c, `\`, "/")
	}
	b := strings.ToLower(path.Base(path.Clean(c)))
	for _, ext := range []string{".exe", ".com", ".bat", ".cmd", ".ps1", ".bin"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}

// unversioned strips a version suffix: python3.12 -> python, bash-5.2 ->
// bash, node22 -> node. It returns "" when there is none.
func unversioned(b string) string {
	base := strings.TrimRight(b, "0123456789.-_")
	if base == b || base == "" {
		return ""
	}
	return base
}

// lookup finds name in m by its normalized form or, failing that, its
// unversioned form.
func lookup[V any](m map[string]V, c string) (V, string, bool) {
	b := normalizeProgram(c)
	if v, ok := m[b]; ok {
		return v, b, true
	}
	if u := unversioned(b); u != "" {
		if v, ok := m[u]; ok {
			return v, u, true
		}
	}
	var zero V
	return zero, "", false
}

// interp says how one interpreter takes program text on its command line.
type interp struct {
	getopt     bool     // short options bundle (-Bc) and take attached values
	inline     string   // getopt letters whose value is program text
	values     string   // getopt letters taking a value (attached, else the next argument)
	attached   string   // getopt letters taking the rest of the bundle as their value
	digits     string   // getopt letters taking an optional attached number only (perl -l, -0)
	stop       string   // getopt letters that end option parsing (python -m MODULE)
	inlineArgs []string // exact arguments (and --long=...) carrying program text
	valueArgs  []string // non-getopt options taking the next argument unless written --x=v
	scanAll    bool     // options may follow positional arguments (erl)
	subInline  []string // first positional words that take program text or a shell command
}

// interps are the interpreters refused when given inline code. The names
// are normalized (see normalizeProgram) and versioned forms match too.
var interps = map[string]interp{
	"nodejs":  nodeInterp,
	"python":  {getopt: true, inline: "c", values: "WXQ", stop: "m"},
	"pypy":    {getopt: true, inline: "c", values: "WXQ", stop: "m"},
	"perl":    {getopt: true, inline: "eE", values: "IMm", attached: "ixdD", digits: "0lC"},
	"ruby":    {getopt: true, inline: "e", values: "CEIr", attached: "FixK", digits: "0TW"},
	"node":    nodeInterp,
	"bun":     {getopt: true, inline: "ep", values: "r", inlineArgs: []string{"--eval", "--print"}, subInline: []string{"exec"}},
	"deno":    {inlineArgs: []string{"--eval"}, subInline: []string{"eval", "task"}},
	"php":     {inlineArgs: []string{"-r", "-B", "-R", "-E"}, valueArgs: []string{"-d", "-c", "-z"}},
	"lua":     {inlineArgs: []string{"-e"}, valueArgs: []string{"-l"}},
	"luajit":  {inlineArgs: []string{"-e"}, valueArgs: []string{"-l", "-j"}},
	"rscript": {inlineArgs: []string{"-e"}},
	"r":       {inlineArgs: []string{"-e"}, scanAll: true},
	"julia":   {inlineArgs: []string{"-e", "-E", "--eval", "--print"}, valueArgs: []string{"-L", "--load", "-J", "-p", "-t", "-C"}},
	"elixir":  {inlineArgs: []string{"-e", "--eval"}, valueArgs: []string{"-r", "-pr", "--erl", "--cookie", "--sname", "--name"}},
	"erl":     {inlineArgs: []string{"-eval", "-s", "-run"}, scanAll: true},
	"groovy":  {inlineArgs: []string{"-e"}},
	"scala":   {inlineArgs: []string{"-e"}},
	"racket":  {inlineArgs: []string{"-e", "--eval", "-i"}},
	"guile":   {inlineArgs: []string{"-c", "-e"}},
	"sbcl":    {inlineArgs: []string{"--eval"}, scanAll: true},
	"ghc":     {inlineArgs: []string{"-e"}, scanAll: true},
	"clojure": {inlineArgs: []string{"-e", "--eval"}},
	"clj":     {inlineArgs: []string{"-e", "--eval"}},
	"tclsh":   {inlineArgs: []string{"-c"}},
	"wish":    {inlineArgs: []string{"-c"}},
}

var nodeInterp = interp{getopt: true, inline: "ep", values: "rC", inlineArgs: []string{"--eval", "--print"},
	valueArgs: []string{"--require", "--import", "--loader", "--experimental-loader", "--conditions",
		"--input-type", "--inspect-port", "--title", "--env-file", "--env-file-if-exists",
		"--disable-warning", "--watch-path", "--redirect-warnings", "--icu-data-dir", "--openssl-config"}}

// programIsCode are programs whose first operand is always a program in
// their own language with a way to run commands (awk's system(), sed's e
// command): refused whatever the arguments.
var programIsCode = map[string]bool{
	"awk": true, "gawk": true, "mawk": true, "nawk": true, "goawk": true, "onetrue-awk": true,
	"sed": true, "gsed": true, "ssed": true,
	"mshta": true, "cscript": true, "wscript": true, "rundll32": true, "regsvr32": true,
}

// launcher is a program that runs another program named in its arguments
// (npx PKG, uv run CMD): the inner program is checked like the command.
type launcher struct {
	sub       []string // subcommand words before the inner program ("" = none needed)
	valueArgs []string // options taking the next argument unless written --x=v
	refuse    []string // options that run a command line through a shell
	scripts   []string // subcommands that run package.json scripts through a shell
	// commands, when set, are all the launcher's own subcommands: any
	// other first word names a package.json script, which it runs through
	// a shell (yarn build is yarn run build).
	commands []string
}

// yarnCommands are yarn's own commands (classic and modern); 'yarn WORD'
// with any other WORD runs the package.json script WORD.
var yarnCommands = []string{"add", "audit", "autoclean", "bin", "cache", "check", "config", "constraints", "create",
	"dedupe", "dlx", "exec", "explain", "generate-lock-entry", "global", "help", "import", "info", "init", "install",
	"licenses", "link", "list", "login", "logout", "node", "npm", "outdated", "owner", "pack", "patch", "patch-commit",
	"plugin", "policies", "publish", "rebuild", "remove", "run", "sdks", "search", "set", "stage", "start", "tag",
	"team", "test", "unlink", "unplug", "up", "upgrade", "upgrade-interactive", "version", "versions", "why",
	"workspace", "workspaces"}

var launchers = map[string]launcher{
	"npx":  {valueArgs: []string{"-p", "--package", "--registry", "--cache", "--userconfig"}, refuse: []string{"-c", "--call"}},
	"bunx": {valueArgs: []string{"-p", "--package"}},
	"pnpx": {valueArgs: []string{"--package"}},
	"npm": {sub: []string{"exec", "x"}, valueArgs: []string{"-p", "--package", "--registry", "--prefix", "-w", "--workspace"},
		refuse: []string{"-c", "--call"}, scripts: []string{"run", "run-script", "rum", "urn", "start", "stop", "restart", "test", "t", "tst"}},
	"pnpm": {sub: []string{"exec", "dlx"}, valueArgs: []string{"--package", "-C", "--dir", "--filter", "-F"},
		refuse: []string{"-c", "--shell-mode"}, scripts: []string{"run", "run-script", "start", "test", "t"}},
	"yarn": {sub: []string{"exec", "dlx"}, valueArgs: []string{"-p", "--package", "--cwd"},
		scripts: []string{"run", "start", "test", "workspace", "workspaces"}, commands: yarnCommands},
	"bun": {sub: []string{"x"}, valueArgs: []string{"-p", "--package"}},
	"uvx": {valueArgs: []string{"--from", "--with", "--with-requirements", "--python", "-p", "--index", "--index-url", "--extra-index-url", "--directory", "--project"}},
	"uv": {sub: []string{"run", "tool"}, valueArgs: []string{"--from", "--with", "--with-requirements", "--with-editable", "--python", "-p",
		"--index", "--index-url", "--extra-index-url", "--directory", "--project", "--package", "--extra", "--group", "--only-group", "--env-file"}},
	"pipx": {sub: []string{"run"}, valueArgs: []string{"--spec", "--python", "--index-url", "--pip-args"}},
}

// CommandProblem says why command with args must not run, or "" when it
// may: a shell or launcher (sh, env, xargs ...), a program whose operand
// is code (awk, sed), an interpreter given inline code (python3 -c, node
// -e, perl -e ...), find with -exec, a package launcher asked to run a
// shell command line or a package script, or a launcher whose inner
// program is any of these (npx bash -c ..., uv run python -c ...). In
// project scope, --env-file (which loads variables the env checks never
// see) is refused too.
func CommandProblem(scope Scope, command string, args []string) string {
	return commandProblem(scope, command, args, 0)
}

func commandProblem(scope Scope, command string, args []string, depth int) string {
	q := fmt.Sprintf("%q", command)
	if isShell(command) {
		return fmt.Sprintf("command %s is a shell or command launcher", q)
	}
	if _, name, ok := lookup(programIsCode, command); ok {
		return fmt.Sprintf("command %s runs a program written in its arguments (%s scripts can run commands)", q, name)
	}
	if scope == ScopeProject {
		for _, a := range args {
			if a == "--env-file" || strings.HasPrefix(a, "--env-file=") || strings.HasPrefix(a, "--env-file-if-exists") {
				return fmt.Sprintf("argument %q loads environment variables from a file, which a project declaration may not do (the env checks would never see them)", a)
			}
		}
	}
	if normalizeProgram(command) == "find" || unversioned(normalizeProgram(command)) == "find" {
		for _, a := range args {
			switch a {
			case "-exec", "-execdir", "-ok", "-okdir":
				return fmt.Sprintf("command %s with %s runs other commands", q, a)
			}
		}
	}
	if it, name, ok := lookup(interps, command); ok {
		if opt := it.inlineOption(name, args); opt != "" {
			return fmt.Sprintf("command %s is the %s interpreter given inline code (%s)", q, name, opt)
		}
	}
	if l, name, ok := lookup(launchers, command); ok && depth < 4 {
		inner, rest, why := l.inner(name, args)
		if why != "" {
			return fmt.Sprintf("command %s %s", q, why)
		}
		if inner != "" {
			if p := commandProblem(scope, inner, rest, depth+1); p != "" {
				return fmt.Sprintf("command %s runs %s: %s", q, inner, p)
			}
		}
	}
	return ""
}

// inlineOption returns the option that carries program text ("-c",
// "--eval", "eval"), or "".
func (it interp) inlineOption(name string, args []string) string {
	positional := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			if positional == 0 {
				for _, s := range it.subInline {
					if a == s {
						return a
					}
				}
				if name == "deno" || name == "bun" {
					// A subcommand (deno run, bun run): its options follow.
					if strings.HasPrefix(strings.ToLower(a), "data:") {
						return a[:5] + " URL"
					}
					if a == "run" || a == "serve" || a == "x" {
						positional++
						continue
					}
				}
			} else if (name == "deno" || name == "bun") && strings.HasPrefix(strings.ToLower(a), "data:") {
				return "data: URL"
			}
			positional++
			if !it.scanAll {
				return ""
			}
			continue
		}
		if strings.HasPrefix(a, "--") || !it.getopt {
			opt, val, hasVal := strings.Cut(a, "=")
			for _, s := range it.inlineArgs {
				if opt == s {
					return opt
				}
			}
			if name == "node" && opt == "--run" {
				return "--run, which runs a package.json script through a shell"
			}
			for _, s := range it.valueArgs {
				if opt == s {
					if !hasVal && i+1 < len(args) {
						i++
						val = args[i]
					}
					if name == "node" && strings.HasPrefix(strings.ToLower(val), "data:") {
						return opt + " data: URL"
					}
					break
				}
			}
			continue
		}
		// A bundle of getopt letters.
		bundle := a[1:]
		for j := 0; j < len(bundle); j++ {
			c := bundle[j]
			switch {
			case strings.IndexByte(it.inline, c) >= 0:
				return "-" + string(c)
			case strings.IndexByte(it.stop, c) >= 0:
				return ""
			case strings.IndexByte(it.values, c) >= 0:
				val := bundle[j+1:]
				if val == "" && i+1 < len(args) {
					i++
					val = args[i]
				}
				if name == "perl" && (c == 'M' || c == 'm') && !perlModuleRe().MatchString(val) {
					return "-" + string(c) + " with code"
				}
				if (name == "node" || name == "bun") && strings.HasPrefix(strings.ToLower(val), "data:") {
					return "-" + string(c) + " data: URL"
				}
				j = len(bundle)
			case strings.IndexByte(it.attached, c) >= 0:
				j = len(bundle)
			case strings.IndexByte(it.digits, c) >= 0:
				for j+1 < len(bundle) && strings.IndexByte("0123456789abcdefABCDEFxX", bundle[j+1]) >= 0 && !(c == 'l' && bundle[j+1] > '7') {
					j++
				}
			}
		}
	}
	return ""
}

// inner returns the program a launcher runs and its arguments, or why the
// launcher itself is refused.
func (l launcher) inner(name string, args []string) (string, []string, string) {
	i := 0
	needSub := len(l.sub) > 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if needSub {
				if name == "uv" && a == "tool" && i+1 < len(args) && args[i+1] == "run" {
					i++
					needSub = false
					continue
				}
				for _, s := range l.sub {
					if a == s && a != "tool" {
						needSub = false
					}
				}
				for _, s := range l.scripts {
					if a == s {
						return "", nil, fmt.Sprintf("%s runs a package.json script through a shell", a)
					}
				}
				if name == "yarn" && a == "node" {
					return "node", args[i+1:], "" // yarn node ARGS is node ARGS
				}
				if l.commands != nil && !slices.Contains(l.commands, a) {
					return "", nil, fmt.Sprintf("%s runs the package.json script %q through a shell (%s is not one of its commands)", name, a, a)
				}
				if needSub {
					// Some other subcommand (npm install, uv sync ...):
					// it runs no program named here.
					return "", nil, ""
				}
				continue
			}
			break
		}
		opt, _, hasVal := strings.Cut(a, "=")
		for _, s := range l.refuse {
			if opt == s {
				return "", nil, fmt.Sprintf("%s runs a command line through a shell", opt)
			}
		}
		for _, s := range l.valueArgs {
			if opt == s && !hasVal {
				i++
				break
			}
		}
	}
	if needSub || i >= len(args) {
		return "", nil, ""
	}
	inner := args[i]
	// npx @scope/pkg@1.2 -> pkg; uvx tool@latest -> tool.
	if k := strings.LastIndexByte(inner, '@'); k > 0 {
		inner = inner[:k]
	}
	return inner, args[i+1:], ""
}

// CheckProgram checks a command resolved to an absolute path: the path's
// own name, and the name of what it is a symlink to (every link resolved),
// are checked with CommandProblem, and the file is compared with the
// shells installed in the usual places, so bash behind another name or a
// hard link to it is refused too. It returns "" when the program may run.
func CheckProgram(scope Scope, program string, args []string) string {
	var c programChecker
	return c.check(scope, program, args)
}

// programChecker is CheckProgram for the many programs of one load: what
// only depends on the file system (a program's resolved symlinks and its
// identity, the installed shells' identities) is looked up once per load
// instead of once per server; the file is compared again by proc at
// launch time like every other path. The zero value is ready.
type programChecker struct {
	progs  map[string]programFile
	shells []shellFile // nil until a program needed them
	listed bool
}

// programFile is what the file system said about one program.
type programFile struct {
	real  string      // every symlink resolved; "" when that failed
	st    os.FileInfo // real's; nil when it cannot be stat'ed
	shell string      // the installed shell it is the same file as, or ""
}

type shellFile struct {
	path string
	st   os.FileInfo
}

func (c *programChecker) check(scope Scope, program string, args []string) string {
	if p := CommandProblem(scope, program, args); p != "" {
		return p
	}
	f := c.file(program)
	if f.real == "" {
		return ""
	}
	if f.real != program {
		if p := CommandProblem(scope, f.real, args); p != "" {
			return fmt.Sprintf("%s is a symlink to %s: %s", program, f.real, p)
		}
	}
	if f.shell != "" {
		return fmt.Sprintf("%s is the same file as %s, a shell", program, f.shell)
	}
	return ""
}

// file resolves program once per checker.
func (c *programChecker) file(program string) programFile {
	if f, ok := c.progs[program]; ok {
		return f
	}
	var f programFile
	if real, err := filepath.EvalSymlinks(program); err == nil {
		f.real = real
		if st, err := os.Stat(real); err == nil {
			f.st = st
			for _, sh := range c.installedShells() {
				if os.SameFile(st, sh.st) {
					f.shell = sh.path
					break
				}
			}
		}
	}
	if c.progs == nil {
		c.progs = map[string]programFile{}
	}
	c.progs[program] = f
	return f
}

// installedShells stats the known shell files once per checker.
func (c *programChecker) installedShells() []shellFile {
	if c.listed {
		return c.shells
	}
	c.listed = true
	var paths []string
	for _, dir := range []string{"/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"} {
		for _, sh := range knownShellFiles {
			paths = append(paths, filepath.Join(dir, sh))
		}
	}
	if root := os.Getenv("SystemRoot"); runtime.GOOS == "windows" && filepath.IsAbs(root) {
		for _, sh := range knownWindowsShellFiles {
			paths = append(paths, filepath.Join(root, sh))
		}
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil {
			c.shells = append(c.shells, shellFile{path: p, st: st})
		}
	}
	return c.shells
}

// knownWindowsShellFiles, under %SystemRoot%, are compared by file
// identity in CheckProgram on Windows (a hard link to cmd.exe under
// another name).
var knownWindowsShellFiles = []string{
	`System32\cmd.exe`, `System32\WindowsPowerShell\v1.0\powershell.exe`, `System32\wsl.exe`,
	`System32\bash.exe`, `System32\wscript.exe`, `System32\cscript.exe`, `System32\mshta.exe`,
}

// knownShellFiles are compared by file identity in CheckProgram.
var knownShellFiles = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox", "env"}

// ResolveProgram finds a declared command on path (a PATH-style list): an
// absolute command is cleaned and checked; a bare name is looked up in
// each absolute entry in order (empty and relative entries are skipped,
// never the working directory). It returns "" when nothing executable is
// found. The gateway launches exactly the path returned here. On Windows
// it is proc's resolution (PATHEXT, .exe and .com files only; Windows
// has no execute bit to check).
func ResolveProgram(command, path string) string {
	if command == "" {
		return ""
	}
	if runtime.GOOS == "windows" {
		p, err := proc.ResolveCommand(command, path)
		if err != nil {
			return ""
		}
		return p
	}
	if filepath.IsAbs(command) {
		c := filepath.Clean(command)
		if executable(c) {
			return c
		}
		return ""
	}
	if strings.ContainsRune(command, '/') {
		return ""
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, command)
		if executable(p) {
			return p
		}
	}
	return ""
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
