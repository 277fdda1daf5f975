package main

import (
	"flag"
	"fmt"
	"os"

	"sluice/gateway"
)

func init() {
	register("check", &command{
		summary: "validate the declaration files and the trust file",
		help: `Usage: sluice check [--json] [--project DIR]

Validates the user declaration file (<config dir>/mcp.yaml), the project
declaration file (<project root>/.sluice/mcp.yaml) and the trust file
(<config dir>/trust.json), and prints every diagnostic as

  file:line:col: severity: field: message (fix: ...)

then each server's env as declared and the variables of yours each project
server receives (as in 'sluice servers'; a literal value that looks like a
secret is shown as (hidden)), then a one-line summary. A missing
file is not an error. Nothing is launched.

With --json the same report is one JSON object: the files (as in 'sluice
servers --json'), "servers" (each as 'sluice servers --json' shows it),
"diagnostics" (each with severity, file, line, column, field, message and
fix; [] when there are none), "errors" (true when any diagnostic is an
error) and "summary" (the counts of the summary line). It is printed
whatever the diagnostics are; the exit status says whether there are
errors.

Flags:
  --json         print the report as JSON
  --project DIR  the project root (default: found from the working directory)

Exit status:
  0  no errors (warnings may be printed)
  1  at least one error
  2  bad flags
`,
		run: runCheck,
	})
}

func runCheck(e *env) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "check", fs)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(e, "check", "unexpected argument %q; check takes no arguments", pos[0])
	}
	safeOutput(e, *asJSON)
	g, closeFn, code, ok := openGateway(e, "check", *project)
	if !ok {
		return code
	}
	defer closeFn()
	rep := g.Servers().Masked()
	files := 0
	for _, f := range []string{rep.UserFile, rep.ProjectFile} {
		if f != "" && fileExists(f) {
			files++
		}
	}
	user, project2 := 0, 0
	for _, s := range rep.Servers {
		if s.Scope == "project" {
			project2++
		} else {
			user++
		}
	}
	if *asJSON {
		out := checkJSON{Report: rep, Diagnostics: rep.Diagnostics,
			Summary: checkSummary{DeclarationFiles: files, Servers: len(rep.Servers), User: user, Project: project2}}
		if out.Servers == nil {
			out.Servers = []gateway.ServerView{}
		}
		if out.Diagnostics == nil {
			out.Diagnostics = []gateway.Diagnostic{}
		}
		for _, d := range rep.Diagnostics {
			if d.Severity == "error" {
				out.Summary.Errors++
			} else {
				out.Summary.Warnings++
			}
		}
		if err := writeJSON(e.stdout, out); err != nil {
			return reportErr(e.stderr, "check", err)
		}
		if rep.Errors {
			fmt.Fprintf(e.stderr, "sluice check: %s found\n", countDiags(rep.Diagnostics))
			return exitFailure
		}
		return exitOK
	}
	for _, d := range rep.Diagnostics {
		fmt.Fprintln(e.stdout, d.String())
	}
	printDetails(e.stdout, rep.Servers, false)
	summary := fmt.Sprintf("%s in %s; %s declared (%d user, %d project)",
		countDiags(rep.Diagnostics), plural(files, "declaration file"), plural(len(rep.Servers), "server"), user, project2)
	if rep.Errors {
		fmt.Fprintf(e.stdout, "FAIL: %s\n", summary)
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", summary)
	return exitOK
}

// checkJSON is check --json's report: the servers report with every
// diagnostic listed (an empty list too) and the summary line's counts.
type checkJSON struct {
	*gateway.Report
	Diagnostics []gateway.Diagnostic `json:"diagnostics"`
	Summary     checkSummary         `json:"summary"`
}

type checkSummary struct {
	Errors           int `json:"errors"`
	Warnings         int `json:"warnings"`
	DeclarationFiles int `json:"declarationFiles"`
	Servers          int `json:"servers"`
	User             int `json:"user"`
	Project          int `json:"project"`
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func existsNote(p string) string {
	if p == "" || fileExists(p) {
		return ""
	}
	return " (not present)"
}
