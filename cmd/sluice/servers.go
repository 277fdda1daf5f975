package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"sluice/gateway"
)

func init() {
	register("servers", &command{
		summary: "list every declared server, its trust and run status, and all diagnostics",
		help: `Usage: sluice servers [--json] [--project DIR]

Lists every server declared in the user file (<config dir>/mcp.yaml) and the
project file (<project root>/.sluice/mcp.yaml), with:

  scope     user (trusted by authorship) or project (needs 'sluice trust')
  declared  file:line:column of the declaration
  trust     trusted, untrusted or stale (declaration changed since trusted)
  class     action class: read, execute or unknown
  digest    first 12 hex digits of the declaration digest trust is bound to
  run       idle, starting, ready, backoff or crash-loop

Servers that may not run are followed by the reason and the exact command
that fixes it, and so are servers whose tools changed since they were
reviewed (see 'sluice review'). Then, for every server with env, passEnv or a command that
resolves to another path, the program it runs, each env entry as declared (a
${env:NAME} reference is shown as that text, never as your value; a literal
value that looks like a secret, by its name or its shape, is shown as
(hidden), and so is such an argument in --json) and, for
project servers, one line "receives your NAME" per variable of yours it gets.
Then every expose glob of the declarations (the user file's expose: and each
server's own) with the tools it exposes now: the tools 'sluice serve' lists
beside the gateway tools (serve --expose adds more for that one process; the
dashboard of a running serve shows its whole set). Then every diagnostic of
both declaration files and the trust file is printed as

  file:line:col: severity: field: message (fix: ...)

Nothing is launched.

Flags:
  --json         print the whole report as JSON
  --project DIR  the project root (default: found from the working directory)

Exit status:
  0  no errors (warnings may be printed)
  1  a declaration or the trust file has errors
  2  bad flags
`,
		run: runServers,
	})
}

func runServers(e *env) int {
	fs := flag.NewFlagSet("servers", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "servers", fs)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(e, "servers", "unexpected argument %q; servers takes no arguments", pos[0])
	}
	safeOutput(e, *asJSON)
	g, closeFn, code, ok := openGateway(e, "servers", *project)
	if !ok {
		return code
	}
	defer closeFn()
	rep := g.Servers()
	g.AddToolChanges(rep)
	g.AddExposure(rep)
	rep = rep.Masked()
	if *asJSON {
		if rep.Servers == nil {
			rep.Servers = []gateway.ServerView{}
		}
		if err := writeJSON(e.stdout, rep); err != nil {
			return reportErr(e.stderr, "servers", err)
		}
	} else {
		printReport(e.stdout, rep)
	}
	if rep.Errors {
		fmt.Fprintf(e.stderr, "sluice servers: %s found; fix them and run 'sluice check'\n", countDiags(rep.Diagnostics))
		return exitFailure
	}
	return exitOK
}

func printReport(w io.Writer, rep *gateway.Report) {
	fmt.Fprintf(w, "user file:    %s%s\n", rep.UserFile, existsNote(rep.UserFile))
	if rep.ProjectRoot != "" {
		fmt.Fprintf(w, "project root: %s\n", rep.ProjectRoot)
		fmt.Fprintf(w, "project file: %s%s\n", rep.ProjectFile, existsNote(rep.ProjectFile))
	} else {
		fmt.Fprintf(w, "project:      none found (run inside a project or pass --project DIR)\n")
	}
	fmt.Fprintln(w)
	if len(rep.Servers) == 0 {
		fmt.Fprintf(w, "No servers declared. Declare one under 'servers:' in %s\n", rep.UserFile)
	} else {
		rows := [][]string{{"ID", "SCOPE", "DECLARED AT", "TRUST", "CLASS", "DIGEST", "RUN"}}
		for _, s := range rep.Servers {
			rows = append(rows, []string{s.ID, s.Scope, fmt.Sprintf("%s:%d:%d", cleanLine(s.File), s.Line, s.Column), s.Trust, s.ActionClass, shortDigest(s.Digest), string(s.Run)})
		}
		styledTable(w, rows, func(row, col int, cell string) string {
			switch {
			case row == 0:
				return styleBold
			case col == 3:
				return trustStyle(cell)
			case col == 6:
				return runStyle(cell)
			}
			return ""
		})
		var notes []string
		for _, s := range rep.Servers {
			if !s.Trusted() {
				n := fmt.Sprintf("%s: %s: %s", s.ID, s.Trust, s.Reason)
				if s.Remedy != "" {
					n += "\n    fix: " + s.Remedy
				}
				notes = append(notes, n)
			}
			if tc := s.ToolChange; tc != nil {
				notes = append(notes, fmt.Sprintf("%s: %s\n    fix: run 'sluice review %s' to see the change and 'sluice review %s --accept' to accept it (or accept it on the dashboard's Servers page)", s.ID, tc.Summary, s.ID, s.ID))
			}
			if s.RunError != "" {
				notes = append(notes, fmt.Sprintf("%s: %s: %s", s.ID, s.Run, indentRest(clean(s.RunError), "    ")))
			}
			if s.Auth != "" && s.Auth != "header" {
				n := fmt.Sprintf("%s: oauth: %s", s.ID, s.Auth)
				if s.Auth == "none" || s.Auth == "expired" {
					n += " (if the server asks for authorization: sluice auth " + s.ID + ")"
				}
				notes = append(notes, n)
			}
		}
		if len(notes) > 0 {
			fmt.Fprintln(w)
			for _, n := range notes {
				// The server's id and its state are what a reader scans.
				id, rest, _ := strings.Cut(n, ": ")
				fmt.Fprint(w, "  ")
				paint(w, styleBold, id+":")
				fmt.Fprintf(w, " %s\n", rest)
			}
		}
	}
	printDetails(w, rep.Servers, true)
	printExposure(w, rep.Expose)
	if len(rep.Diagnostics) > 0 {
		fmt.Fprintf(w, "\nDiagnostics (%s):\n", countDiags(rep.Diagnostics))
		for _, d := range rep.Diagnostics {
			fmt.Fprintf(w, "  %s\n", d.String())
		}
	}
}

// printExposure shows each expose glob of the declarations with the tools
// it exposes now.
func printExposure(w io.Writer, globs []gateway.ExposeGlob) {
	if len(globs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nExposed tools (listed beside the gateway tools by 'sluice serve' in gateway and auto mode; serve --expose adds more for that process):\n")
	for _, e := range globs {
		fmt.Fprintf(w, "  %s  from %s\n", cleanLine(e.Glob), cleanLine(e.Source))
		if len(e.Tools) == 0 {
			fmt.Fprintf(w, "    exposes nothing now: no listed tool matches (untrusted, hidden by tools: or the profile, held for review, or not in the catalog yet)\n")
		}
		for _, c := range e.Tools {
			fmt.Fprintf(w, "    %s\n", cleanLine(c))
		}
	}
}

// countDiags is "2 errors, 1 warning".
func countDiags(ds []gateway.Diagnostic) string {
	errs, warns := 0, 0
	for _, d := range ds {
		if d.Severity == "error" {
			errs++
		} else {
			warns++
		}
	}
	return plural(errs, "error") + ", " + plural(warns, "warning")
}

func indentRest(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// printDetails shows, for every server that has any, the program its
// command resolves to (project servers, withProgram), its env as declared and — for project servers —
// each variable of the operator's environment it receives, in plain
// words.
func printDetails(w io.Writer, servers []gateway.ServerView, withProgram bool) {
	header := false
	for _, s := range servers {
		env := envLines(s)
		project := s.Scope == "project"
		showProgram := withProgram && project && s.Program != "" && s.Program != s.Command
		if len(env) == 0 && len(s.PassEnv) == 0 && !showProgram {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nEnv as declared (a ${env:NAME} reference is shown as written, never as your value):\n")
			header = true
		}
		fmt.Fprintf(w, "  %s (%s):", s.ID, s.Scope)
		if showProgram {
			fmt.Fprintf(w, " command %s runs %s", cleanLine(s.Command), cleanLine(s.Program))
		}
		fmt.Fprintln(w)
		for _, l := range env {
			fmt.Fprintf(w, "    env %s\n", l)
		}
		if len(s.PassEnv) > 0 {
			fmt.Fprintf(w, "    passEnv %s\n", strings.Join(s.PassEnv, ", "))
		}
		if project {
			for _, g := range s.Receives {
				fmt.Fprintf(w, "    !! project server %s %s\n", s.ID, grantText(g.Var, g.As, g.Via))
			}
		}
	}
}
