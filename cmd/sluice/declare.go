package main

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"sluice/gateway"
)

// The commands that manage declarations: add, update, remove, enable,
// disable, tools. Each edits one file in place (comments, order and
// formatting kept), validated like a load, written atomically, and prints
// the changed lines.

const declareFileHelp = `Which file:
  (default)        the user file, <config dir>/mcp.yaml (SLUICE_HOME)
  --project        the project file, <project root>/.sluice/mcp.yaml; its
                   servers launch nothing until 'sluice trust ID'
  --project-dir DIR
                   the project root for --project (default: found from the
                   working directory)

The file keeps its comments, order and formatting: only the lines of the
edited entry change, and they are printed ("-" removed, "+" added, with
line numbers). The result is validated exactly as loading validates it
and written atomically; a refused change leaves the file untouched.
`

const declareExitHelp = `Exit status:
  0    the file was changed (or already said so)
  1    the file could not be read or written
  2    bad input: flags, an invalid declaration, an unknown server
`

func init() {
	register("add", &command{
		summary: "declare a server in the user (or project) file",
		help: `Usage: sluice add ID [--env K=V ...] [--cwd DIR] [--action-class CLASS] [--project] -- COMMAND [ARGS...]
       sluice add ID --url URL [--action-class CLASS] [--project]

Declares server ID: a local server run as COMMAND ARGS... (no shell; each
argument as given), or a remote one at URL.

Flags:
  --url URL            a remote MCP server (streamable HTTP or SSE)
  --env K=V            an env entry (repeatable); ${env:NAME} references
                       are written as given and expanded at launch
  --cwd DIR            the working directory (relative: to the file's base)
  --action-class CLASS read, execute or unknown (user file only)

` + declareFileHelp + "\n" + declareExitHelp,
		run: func(e *env) int { return runDeclare(e, "add") },
	})
	register("update", &command{
		summary: "change a declared server's command, url, args, env, cwd or action class",
		help: `Usage: sluice update ID [--url URL] [--env K=V ...] [--cwd DIR] [--action-class CLASS] [--project] [-- COMMAND [ARGS...]]

Changes the given fields of server ID and leaves the others as written.
A command after -- replaces command and args (and drops url and its
headers); --url replaces the command (and drops args, env and cwd).
--env adds or replaces one entry (others stay).

` + declareFileHelp + "\n" + declareExitHelp,
		run: func(e *env) int { return runDeclare(e, "update") },
	})
	register("remove", &command{
		summary: "delete a server's declaration",
		help: `Usage: sluice remove ID [--project]

Deletes server ID's entry (and the comment lines directly above it).

` + declareFileHelp + "\n" + declareExitHelp,
		run: func(e *env) int { return runDeclare(e, "remove") },
	})
	register("enable", &command{
		summary: "load a disabled server again",
		help: `Usage: sluice enable ID [--project]

Removes "enabled: false" from server ID.

` + declareFileHelp + "\n" + declareExitHelp,
		run: func(e *env) int { return runDeclare(e, "enable") },
	})
	register("disable", &command{
		summary: "keep a server's declaration without loading it",
		help: `Usage: sluice disable ID [--project]

Sets "enabled: false" on server ID: it stays in the file and is not
loaded (not listed, not launched, calls say it is disabled).

` + declareFileHelp + "\n" + declareExitHelp,
		run: func(e *env) int { return runDeclare(e, "disable") },
	})
	register("tools", &command{
		summary: "set which of a server's tools are exposed (allow and deny globs)",
		help: `Usage: sluice tools ID [--allow GLOB ...] [--deny GLOB ...] [--reset] [--project]

Sets servers.ID.tools: a tool is exposed when it matches an --allow glob
(or none is given) and no --deny glob. Globs match the server's own tool
names (* ? [..]). A list given replaces that list; a list not given stays.
--reset exposes every tool again. A hidden tool is not listed, not found,
not callable and not a code-mode function; asking for it says it is
hidden by configuration. The declaration's digest (trust) is unchanged.

` + declareFileHelp + "\n" + declareExitHelp,
		run: func(e *env) int { return runDeclare(e, "tools") },
	})
}

// listFlag collects a repeatable flag.
type listFlag struct {
	vals []string
	set  bool
}

func (l *listFlag) String() string { return strings.Join(l.vals, ",") }
func (l *listFlag) Set(v string) error {
	l.vals, l.set = append(l.vals, v), true
	return nil
}

func runDeclare(e *env, cmd string) int {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	project := fs.Bool("project", false, "")
	projectDir := fs.String("project-dir", "", "")
	var url, cwd, class *string
	var envs, allow, deny listFlag
	var reset *bool
	switch cmd {
	case "add", "update":
		url = fs.String("url", "", "")
		cwd = fs.String("cwd", "", "")
		class = fs.String("action-class", "", "")
		fs.Var(&envs, "env", "")
	case "tools":
		fs.Var(&allow, "allow", "")
		fs.Var(&deny, "deny", "")
		reset = fs.Bool("reset", false, "")
	}
	// Split at the first "--": what follows is the server's command line,
	// never sluice flags.
	args := e.args
	var argv []string
	dashdash := false
	for i, a := range args {
		if a == "--" {
			argv, args, dashdash = args[i+1:], args[:i], true
			break
		}
	}
	if !dashdash && (cmd == "add" || cmd == "update") {
		// The commonest mistake: the server's command line without the
		// -- before it (its flags then read as sluice's).
		if before, after, ok := commandWithoutDashes(fs, args); ok {
			return usageErr(e, cmd, "the server's command line goes after --: sluice %s %s -- %s", cmd, shellWords(maskEnvFlags(before)), shellWords(gateway.MaskArgs(after)))
		}
	}
	e2 := *e
	e2.args = args
	pos, code, ok := flagsOrExit(&e2, cmd, fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, cmd, "give exactly one server id (got %d arguments before --)", len(pos))
	}
	id := pos[0]
	if dashdash && cmd != "add" && cmd != "update" {
		return usageErr(e, cmd, "-- COMMAND applies to add and update only")
	}
	if dashdash && len(argv) == 0 {
		return usageErr(e, cmd, "nothing after --: give the server's command and its arguments")
	}
	var spec gateway.ServerSpec
	if url != nil {
		spec.URL, spec.Cwd, spec.ActionClass = *url, *cwd, *class
		for i, kv := range envs.vals {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usageErr(e, cmd, "%s", envEntryProblem(i, kv))
			}
			spec.Env = append(spec.Env, gateway.EnvVar{Key: k, Value: v})
		}
		if len(argv) > 0 {
			spec.Command, spec.Args, spec.SetArgs = argv[0], append([]string{}, argv[1:]...), true
		}
		if spec.URL != "" && len(argv) > 0 {
			return usageErr(e, cmd, "give either --url or a command after --, not both")
		}
		if spec.URL != "" && (spec.Cwd != "" || len(spec.Env) > 0) {
			return usageErr(e, cmd, "--cwd and --env apply to local (command) servers only")
		}
	}
	if *projectDir != "" && !*project {
		return usageErr(e, cmd, "--project-dir chooses the project root for --project; add --project")
	}
	g, closeFn, code, ok := openGateway(e, cmd, *projectDir)
	if !ok {
		return code
	}
	defer closeFn()
	var ch *gateway.Change
	var err error
	switch cmd {
	case "add":
		ch, err = g.AddServer(*project, id, spec)
	case "update":
		if spec.Command == "" && spec.URL == "" && !spec.SetArgs && spec.Cwd == "" && spec.ActionClass == "" && len(spec.Env) == 0 {
			return usageErr(e, cmd, "nothing to change: give --url, --env, --cwd, --action-class or -- COMMAND [ARGS...]")
		}
		ch, err = g.UpdateServer(*project, id, spec)
	case "remove":
		ch, err = g.RemoveServer(*project, id)
	case "enable", "disable":
		ch, err = g.SetEnabled(*project, id, cmd == "enable")
	case "tools":
		if !allow.set && !deny.set && !*reset {
			return usageErr(e, cmd, "give --allow GLOB, --deny GLOB or --reset")
		}
		var a, d []string
		if allow.set {
			a = allow.vals
		}
		if deny.set {
			d = deny.vals
		}
		ch, err = g.SetTools(*project, id, a, d, *reset)
	}
	if err != nil {
		return reportErr(e.stderr, cmd, err)
	}
	if ch.Diff == "" {
		what := map[string]string{"enable": "is already enabled", "disable": "is already disabled"}[cmd]
		if what == "" {
			what = "already says so"
		}
		fmt.Fprintf(e.stdout, "%s: unchanged (server %s %s)\n", ch.File, id, what)
		return exitOK
	}
	verb := "changed"
	if ch.Created {
		verb = "created"
	}
	fmt.Fprintf(e.stdout, "%s %s:\n%s", verb, ch.File, clean(ch.Diff))
	for _, w := range ch.Warnings {
		fmt.Fprintf(e.stderr, "sluice %s: warning: %s\n", cmd, clean(w.Message))
	}
	if *project && (cmd == "add" || cmd == "update" || cmd == "enable") {
		fmt.Fprintf(e.stdout, "project servers launch nothing until trusted: review with 'sluice servers', then run 'sluice trust %s'\n", id)
	}
	return exitOK
}

// commandWithoutDashes splits args written as ID COMMAND ARGS... without
// the "--" between them: before is up to the id (with sluice's own flags),
// after starts at the first word after the id that is neither one of
// sluice's flags nor its value. ok is false when there is no such word.
func commandWithoutDashes(fs *flag.FlagSet, args []string) (before, after []string, ok bool) {
	id := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if id {
				return args[:i], args[i:], true
			}
			id = true
			continue
		}
		name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			if id {
				return args[:i], args[i:], true
			}
			return nil, nil, false // an unknown flag of sluice's: said as such
		}
		if b, isBool := f.Value.(interface{ IsBoolFlag() bool }); !hasVal && !(isBool && b.IsBoolFlag()) {
			i++ // its value
		}
	}
	return nil, nil, false
}

// maskEnvFlags is sluice's own flags before the server's command line as
// echoed back: the value of each --env KEY=VALUE masked by the rule the
// listings show env values by (gateway.MaskValue), and any other value
// (a --url) by gateway.MaskArgs. stderr of a script is often a log.
func maskEnvFlags(args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		name, val, joined := strings.Cut(strings.TrimLeft(out[i], "-"), "=")
		if !strings.HasPrefix(out[i], "-") || name != "env" {
			continue
		}
		if !joined {
			if i+1 >= len(out) {
				break
			}
			i++
			val = out[i]
		}
		if k, v, ok := strings.Cut(val, "="); ok {
			val = k + "=" + gateway.MaskValue(k, v)
		}
		if joined {
			out[i] = out[i][:strings.Index(out[i], "=")+1] + val
		} else {
			out[i] = val
		}
	}
	return gateway.MaskArgs(out)
}

// shellWords writes args as a POSIX shell would read them back: a word
// with anything but letters, digits and @%+=:,./_- in single quotes.
func shellWords(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// envEntryProblem says what is wrong with the i-th --env (0-based) that
// is not KEY=VALUE. Its text is repeated only when it reads as a name:
// anything else may be the value itself, a credential pasted without
// its name, such as an upper-case key (AKIAIOSFODNN7EXAMPLE).
func envEntryProblem(i int, kv string) string {
	nth := fmt.Sprintf("--env #%d", i+1)
	switch {
	case strings.HasPrefix(kv, "="):
		return nth + " has no name before its =; write --env NAME=VALUE (its value is not shown)"
	case envNameShape().MatchString(kv) && (strings.Contains(kv, "_") || !strings.ContainsAny(kv, "0123456789")) && gateway.MaskValue("", kv) == kv:
		return fmt.Sprintf("--env %s has no value; write --env %s=VALUE, or --env '%s=${env:%s}' to pass the one in your environment", kv, kv, kv, kv)
	}
	return nth + " is not NAME=VALUE (it has no =; its text is not shown, as it may be a value); write --env NAME=VALUE"
}

var envNameShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`) })
