package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"sluice/gateway"
)

func init() {
	register("trust", &command{
		summary: "record trust in a project server's declaration",
		help: `Usage: sluice trust ID [--action-class read|execute|unknown] [--yes] [--project DIR]

Project declarations (<project root>/.sluice/mcp.yaml) launch nothing until
you trust them. trust shows exactly what is being trusted, then records it in
the trust file (<config dir>/trust.json), bound to:

  - the project root,
  - the server id,
  - the digest of its declaration (id, command, args, cwd as written, env
    with ${env:NAME} references unexpanded, passEnv, timeoutMs).

Any later change to the declaration makes the record stale: the server stops
launching until you review it ('sluice servers') and trust it again.

What is shown first: project root, file:line of the declaration, command
and the program it resolves to on your PATH, args, cwd, every env entry as
declared (a ${env:NAME} reference is shown as that text, never as your
value), passEnv, a line "receives your NAME" for every variable of yours the
server would get, the action class and the digest. Control, bidi and
invisible characters are shown as \u escapes.

Confirmation:
  - on a terminal (stdin is a TTY) trust asks "Record trust? [y/N]" unless
    --yes is given;
  - when stdin is not a terminal (scripts, CI) trust records without asking and
    prints what it recorded. Naming the server on the command line is the
    consent; an unattended caller could pass --yes just as well, so refusing
    would add no safety.

Flags:
  --action-class CLASS  read (calls run without approval), execute or unknown
                        (each call needs approval); default: none, so tools
                        the server annotates read-only run and every other
                        call needs approval (re-trusting keeps the class
                        already recorded)
  --yes                 do not ask for confirmation
  --project DIR         the project root (default: found from the working
                        directory)

User-scope servers are trusted by authorship and have no trust record; set
actionClass in the user file instead.

Exit status:
  0  recorded
  1  not recorded: declined at the prompt, or the trust file could not be written
  2  bad input: flags, no such server, a user-scope server
`,
		run: runTrust,
	})
	register("untrust", &command{
		summary: "remove the trust record of a project server",
		help: `Usage: sluice untrust ID [--project DIR]

Removes the trust record of project server ID for the project root, so the
server launches nothing until it is trusted again. The server need not be
declared any more (a record left by a removed declaration can be removed).
Removing a record that does not exist is not an error.

Flags:
  --project DIR  the project root (default: found from the working directory)

Exit status:
  0  removed, or there was no record
  1  the trust file could not be updated
  2  bad input: flags, no project root, a user-scope server
`,
		run: runUntrust,
	})
}

func runTrust(e *env) int {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	class := fs.String("action-class", "", "")
	yes := fs.Bool("yes", false, "")
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "trust", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "trust", "want exactly one server id, got %d arguments", len(pos))
	}
	if looksLikePath(pos[0]) {
		return usageErr(e, "trust", "%q is a path, not a server id: trust takes the id a project file declares under servers: (see 'sluice servers'); pick the project with --project DIR", pos[0])
	}
	safeOutput(e, false)
	g, closeFn, code, ok := openGateway(e, "trust", *project)
	if !ok {
		return code
	}
	defer closeFn()
	plan, err := g.PlanTrust(pos[0], *class)
	if err != nil {
		return reportErr(e.stderr, "trust", err)
	}
	printPlan(e.stdout, plan)
	if !*yes && isTerminal(e.stdin) {
		fmt.Fprintf(e.stderr, "Record trust in %s? [y/N] ", plan.Server.ID)
		if !readYes(e.stdin) {
			fmt.Fprintf(e.stderr, "sluice trust: not recorded; %s still launches nothing\n", plan.Server.ID)
			return exitFailure
		}
	}
	if err := g.Trust(plan); err != nil {
		return reportErr(e.stderr, "trust", err)
	}
	fmt.Fprintf(e.stdout, "Recorded: %s is trusted in %s with action class %s (digest %s) in %s\n",
		plan.Server.ID, plan.ProjectRoot, classText(plan.ActionClass), shortDigest(plan.Server.Digest), plan.TrustFile)
	return exitOK
}

// looksLikePath reports whether a server id argument is a path instead:
// a server id never holds a slash or a dot alone.
func looksLikePath(s string) bool {
	return s == "." || s == ".." || strings.ContainsAny(s, `/\`) || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml")
}

// printPlan shows what trust is about to record. Env values are shown as
// declared: ${env:NAME} references are the reference text, never the
// gateway's value, and every gateway variable the server would receive is
// said in plain words.
func printPlan(w io.Writer, p *gateway.TrustPlan) {
	// Unmasked: a person trusting a project server sees every value it
	// would receive (they come from the repository, not from the user).
	v := p.Server
	fmt.Fprintf(w, "Trusting project server %s\n", v.ID)
	fmt.Fprintf(w, "  project root:  %s\n", cleanLine(p.ProjectRoot))
	fmt.Fprintf(w, "  declared at:   %s:%d:%d\n", cleanLine(v.File), v.Line, v.Column)
	if len(v.CLI) > 0 {
		fmt.Fprintf(w, "  cli tools:     %d (each runs its argv; no shell)\n", len(v.CLI))
		for _, t := range v.CLI {
			fmt.Fprintf(w, "    %s: %s\n", cleanLine(t.Name), cleanLine(t.Argv))
			fmt.Fprintf(w, "      description: %s\n", strings.ReplaceAll(clean(t.Description), "\n", "\n        "))
		}
	} else if v.URL != "" {
		fmt.Fprintf(w, "  url:           %s\n", cleanLine(v.URL))
		fmt.Fprintf(w, "  transport:     %s\n", cleanLine(v.Transport))
		for i, k := range sortedHeaderNames(v.Headers) {
			label := "headers:"
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(w, "  %-14s %s: %s\n", label, cleanLine(k), cleanLine(v.Headers[k]))
		}
	} else {
		fmt.Fprintf(w, "  command:       %s\n", cleanLine(v.Command))
		if v.Program != "" && v.Program != v.Command {
			fmt.Fprintf(w, "  program:       %s (the command on your PATH; trust is bound to it)\n", cleanLine(v.Program))
		}
		fmt.Fprintf(w, "  args:          %s\n", cleanLine(jsonList(v.Args)))
	}
	env := envLines(v)
	if v.URL == "" {
		fmt.Fprintf(w, "  cwd:           %s\n", cleanLine(v.Cwd))
		if len(env) == 0 {
			fmt.Fprintf(w, "  env:           (none)\n")
		}
	}
	for i, l := range env {
		label := "env:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "  %-14s %s\n", label, l)
	}
	if len(v.PassEnv) > 0 {
		fmt.Fprintf(w, "  passEnv:       %s\n", cleanLine(strings.Join(v.PassEnv, ", ")))
	}
	for _, g := range v.Receives {
		fmt.Fprintf(w, "  !! %s\n", grantText(g.Var, g.As, g.Via))
	}
	fmt.Fprintf(w, "  action class:  %s\n", classText(p.ActionClass))
	fmt.Fprintf(w, "  digest:        %s\n", v.Digest)
	fmt.Fprintf(w, "  trust file:    %s\n", p.TrustFile)
	switch v.Trust {
	case "trusted":
		fmt.Fprintf(w, "  (already trusted; the record is replaced)\n")
	case "stale":
		if len(v.Changed) > 0 {
			fmt.Fprintf(w, "  (was trusted before; changed since: %s)\n", strings.Join(v.Changed, ", "))
		} else {
			fmt.Fprintf(w, "  (was trusted before; the declaration changed since)\n")
		}
	}
}

// readYes reads one line and reports whether it says yes.
func readYes(r io.Reader) bool {
	line, _ := bufio.NewReader(r).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

func runUntrust(e *env) int {
	fs := flag.NewFlagSet("untrust", flag.ContinueOnError)
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "untrust", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "untrust", "want exactly one server id, got %d arguments", len(pos))
	}
	if looksLikePath(pos[0]) {
		return usageErr(e, "untrust", "%q is a path, not a server id: untrust takes the id a project file declares under servers: (see 'sluice servers'); pick the project with --project DIR", pos[0])
	}
	g, closeFn, code, ok := openGateway(e, "untrust", *project)
	if !ok {
		return code
	}
	defer closeFn()
	removed, err := g.Untrust(pos[0])
	if err != nil {
		return reportErr(e.stderr, "untrust", err)
	}
	root := g.Servers().ProjectRoot
	if removed {
		fmt.Fprintf(e.stdout, "Removed the trust record of %s in %s; it launches nothing until trusted again\n", pos[0], root)
	} else {
		fmt.Fprintf(e.stdout, "No trust record of %s in %s; nothing changed\n", pos[0], root)
	}
	return exitOK
}

// classText shows a recorded action class; none means the tools' read-only
// annotations decide.
func classText(c string) string {
	if c == "" {
		return "none (tools annotated read-only run; others ask)"
	}
	return c
}

// sortedHeaderNames lists a remote server's declared header names.
func sortedHeaderNames(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
