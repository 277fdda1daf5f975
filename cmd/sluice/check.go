package main

import (
	"flag"
	"fmt"
	"os"
)

func init() {
	register("check", &command{
		summary: "validate the declaration files and the trust file",
		help: `Usage: sluice check [--project DIR]

Validates the user declaration file (<config dir>/mcp.yaml), the project
declaration file (<project root>/.sluice/mcp.yaml) and the trust file
(<config dir>/trust.json), and prints every diagnostic as

  file:line:col: severity: field: message (fix: ...)

then each server's env as declared and the variables of yours each project
server receives (as in 'sluice servers'; a literal value that looks like a
secret is shown as (hidden)), then a one-line summary. A missing
file is not an error. Nothing is launched.

Flags:
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
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "check", fs)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(e, "check", "unexpected argument %q; check takes no arguments", pos[0])
	}
	safeOutput(e, false)
	g, closeFn, code, ok := openGateway(e, "check", *project)
	if !ok {
		return code
	}
	defer closeFn()
	rep := g.Servers().Masked()
	for _, d := range rep.Diagnostics {
		fmt.Fprintln(e.stdout, d.String())
	}
	printDetails(e.stdout, rep.Servers, false)
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
	summary := fmt.Sprintf("%s in %s; %s declared (%d user, %d project)",
		countDiags(rep.Diagnostics), plural(files, "declaration file"), plural(len(rep.Servers), "server"), user, project2)
	if rep.Errors {
		fmt.Fprintf(e.stdout, "FAIL: %s\n", summary)
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", summary)
	return exitOK
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
