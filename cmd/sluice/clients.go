package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sluice/gateway"
)

func init() {
	register("import", &command{
		summary: "turn the MCP servers of other clients' configs into sluice declarations",
		help: `Usage: sluice import [FILE | --from CLIENT] [--project] [--write] [--yes] [--json]

Reads the MCP servers other clients declare and shows them as sluice
declarations. Without FILE or --from it reads every client's user file it
finds; with --from CLIENT only that client's; with FILE that file (the
client is told by the file's name, or by --from).

Clients and their files:
  claude-code     ~/.claude.json (user servers, and this project's), .mcp.json
  claude-desktop  claude_desktop_config.json in the Claude application directory
  cursor          ~/.cursor/mcp.json, .cursor/mcp.json
  vscode          the user mcp.json of VS Code, .vscode/mcp.json ("servers")
  windsurf        ~/.codeium/windsurf/mcp_config.json
  codex           ~/.codex/config.toml ([mcp_servers.NAME] tables)
  gemini          ~/.gemini/settings.json, .gemini/settings.json

Stdio entries become command/args/cwd/env declarations, remote ones url,
transport and headers. An env value or header that looks like a secret is
not copied: the declaration reads it from your environment with
${env:NAME}, and a note says which variable to set. Nothing secret is
printed. References in the client's syntax (${VAR}, $VAR, ${env:VAR})
become ${env:VAR}. Fields sluice has no counterpart for are listed, not
dropped silently. A name that is not a valid server id is renamed (and
said so); a server id already declared is skipped.

Without --write, import prints the declarations it would add and where.
With --write it adds them to your user file (or, with --project, to the
project's .sluice/mcp.yaml), atomically, after keeping a copy of the file
as it was in the sluice config directory's backups/. Every other line of
the file stays as it was. Project servers launch nothing until
'sluice trust ID'.

At a terminal, stderr names each client file as it is read
(--progress=always prints those lines in a log too).

Flags:
  --from CLIENT  read this client's files
  --project      read the repository's client files (.mcp.json,
                 .cursor/mcp.json, .vscode/mcp.json, .gemini/settings.json)
                 and write .sluice/mcp.yaml
  --write        write the declarations (default: only show them)
  --yes          do not ask before writing
  --json         print the result as JSON

Exit status:
  0  shown, or written
  1  the file could not be written
  2  bad input: no such file or client, a file that cannot be read,
     declarations that would not load
`,
		run: runImport,
	})
	register("install", &command{
		summary: "add sluice to an MCP client's config",
		help: `Usage: sluice install CLIENT [--config FILE] [--replace] [--yes] [--dry-run]

Adds an entry named "sluice" that runs 'sluice serve' over stdio to the
client's config (CLIENT is one of ` + strings.Join(gateway.ClientNames(), ", ") + `;
--config names another file of that client's format). It shows the change
first and asks on a terminal. Everything else in the file stays byte for
byte as it was; a copy of the file as it was is kept, so 'sluice
uninstall' can restore it exactly.

--replace also removes the client's entries that sluice now serves: those
whose name is a server declared in sluice with the same command or url
(run 'sluice import --from CLIENT --write' first). Entries it leaves are
listed with why.

Installing twice changes nothing. A file that changed since sluice
installed into it is not touched again.

Flags:
  --config FILE  the client's config file (default: its usual user file)
  --replace      remove the entries now served through sluice
  --yes          do not ask before writing
  --dry-run      only show the change

Exit status:
  0  installed, or already installed
  1  the file could not be written, or the change was declined
  2  bad input: unknown client, a file that cannot be read or edited
  4  refused: the file changed since sluice installed into it
`,
		run: runInstall,
	})
	register("uninstall", &command{
		summary: "restore an MCP client's config as it was before 'sluice install'",
		help: `Usage: sluice uninstall CLIENT [--config FILE] [--yes] [--dry-run] [--forget]

Restores the client's config byte for byte as it was before 'sluice
install' wrote it (or removes it, when install created it). It refuses
when the file changed since install wrote it, since restoring would lose
that change; it then says where the copy of the original is. Uninstalling
twice changes nothing.

Flags:
  --config FILE  the client's config file (default: its usual user file)
  --yes          do not ask before writing
  --dry-run      only show the change
  --forget       forget the install without touching the file (after
                 removing the sluice entry by hand)

Exit status:
  0  restored, or nothing to restore
  1  the file could not be written, or the change was declined
  2  bad input: unknown client
  4  refused: the file changed since sluice installed into it
`,
		run: runUninstall,
	})
}

// importFileProblem says what is wrong with import's FILE before its
// client is guessed from its name ("" = nothing): a guess about a file
// that is not there would send the user to --from for nothing.
func importFileProblem(file string) string {
	st, err := os.Stat(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Sprintf("%s: no such file; give the path of a client's MCP config (e.g. ~/.cursor/mcp.json, .mcp.json; 'sluice help import' lists them), or leave FILE out to read every client file found", file)
	case err != nil:
		return fmt.Sprintf("cannot read %s: %v", file, err)
	case st.IsDir():
		return fmt.Sprintf("%s is a directory; give the path of a client's MCP config file in it (e.g. %s)", file, filepath.Join(file, "mcp.json"))
	}
	return ""
}

func runImport(e *env) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	from := fs.String("from", "", "")
	project := fs.Bool("project", false, "")
	write := fs.Bool("write", false, "")
	yes := fs.Bool("yes", false, "")
	asJSON := fs.Bool("json", false, "")
	pos, code, ok := flagsOrExit(e, "import", fs)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageErr(e, "import", "want at most one FILE, got %d arguments", len(pos))
	}
	if len(pos) == 1 {
		if msg := importFileProblem(pos[0]); msg != "" {
			fmt.Fprintf(e.stderr, "sluice import: %s\n", msg)
			return exitUsage
		}
	}
	safeOutput(e, *asJSON)
	g, closeFn, code, ok := openGateway(e, "import", "")
	if !ok {
		return code
	}
	defer closeFn()
	// Each file read is a line that stays, at a terminal (or with
	// --progress=always); a pipe gets only the answer.
	prog := newReporter(e, "import")
	defer prog.Stop()
	prog.Set("reading client configs")
	req := gateway.ImportRequest{Client: *from, Project: *project, Progress: func(m string) { prog.Note("%s", m) }}
	if len(pos) == 1 {
		req.File = pos[0]
	}
	if *asJSON {
		req.Progress = nil
	}
	res, err := g.Import(req)
	prog.Stop() // before any prompt
	if err != nil {
		return reportErr(e.stderr, "import", err)
	}
	if *write && res.Diff != "" {
		if !*asJSON {
			printImport(e.stdout, res)
		}
		if !*yes && isTerminal(e.stdin) {
			fmt.Fprintf(e.stderr, "Add these declarations to %s? [y/N] ", res.Target)
			if !readYes(e.stdin) {
				fmt.Fprintln(e.stderr, "sluice import: nothing written")
				return exitFailure
			}
		}
		req.Write, req.Progress = true, nil
		if res, err = g.Import(req); err != nil {
			return reportErr(e.stderr, "import", err)
		}
	}
	if *asJSON {
		if res.Servers == nil {
			res.Servers = []gateway.ImportedServer{}
		}
		if err := writeJSON(e.stdout, res); err != nil {
			return reportErr(e.stderr, "import", err)
		}
		return exitOK
	}
	if !*write || res.Diff == "" {
		printImport(e.stdout, res) // with nothing to write, why each server was skipped
	}
	switch {
	case res.Written:
		fmt.Fprintf(e.stdout, "\nWritten: %s", res.Target)
		if res.Backup != "" {
			fmt.Fprintf(e.stdout, " (the file as it was: %s)", res.Backup)
		}
		fmt.Fprintln(e.stdout)
		if res.Scope == "project" {
			fmt.Fprintln(e.stdout, "Project servers launch nothing until you run 'sluice trust ID' for each.")
		}
	case res.Diff == "":
		fmt.Fprintln(e.stdout, "\nNothing to import.")
	default:
		fmt.Fprintf(e.stdout, "\nNothing written; run again with --write to add them to %s.\n", res.Target)
	}
	return exitOK
}

func printImport(w io.Writer, res *gateway.ImportResult) {
	imported := 0
	for _, s := range res.Servers {
		if s.Skipped == "" {
			imported++
		}
	}
	fmt.Fprintf(w, "%s from %s into %s:\n", plural(imported, "server"), plural(len(res.Read), "file"), res.Target)
	for _, s := range res.Servers {
		where := s.File
		if s.Line > 0 {
			where = fmt.Sprintf("%s:%d", s.File, s.Line)
		}
		if s.Skipped != "" {
			fmt.Fprintf(w, "  skipped  %s (%s): %s\n", cleanLine(s.From), where, cleanLine(s.Skipped))
			continue
		}
		fmt.Fprintf(w, "  %-8s %s (%s)\n", s.ID, "from "+cleanLine(s.From), where)
		for _, v := range s.SetVars {
			fmt.Fprintf(w, "           set %s in your environment before it starts\n", v)
		}
	}
	for _, p := range res.Problems {
		fmt.Fprintf(w, "  problem: %s\n", cleanLine(p))
	}
	if res.Diff != "" {
		fmt.Fprintf(w, "\n%s:\n", res.Target)
		printFileDiff(w, res.Diff)
	}
}

func runInstall(e *env) int {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	file := fs.String("config", "", "")
	replace := fs.Bool("replace", false, "")
	yes := fs.Bool("yes", false, "")
	dry := fs.Bool("dry-run", false, "")
	pos, code, ok := flagsOrExit(e, "install", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "install", "want exactly one CLIENT (%s), got %d arguments", strings.Join(gateway.ClientNames(), ", "), len(pos))
	}
	safeOutput(e, false)
	g, closeFn, code, ok := openGateway(e, "install", "")
	if !ok {
		return code
	}
	defer closeFn()
	p, err := g.PlanInstall(gateway.InstallRequest{Client: pos[0], File: *file, Replace: *replace})
	if err != nil {
		return reportErr(e.stderr, "install", err)
	}
	return applyPlan(e, "install", p, *yes, *dry)
}

func runUninstall(e *env) int {
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	file := fs.String("config", "", "")
	yes := fs.Bool("yes", false, "")
	dry := fs.Bool("dry-run", false, "")
	forget := fs.Bool("forget", false, "")
	pos, code, ok := flagsOrExit(e, "uninstall", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "uninstall", "want exactly one CLIENT (%s), got %d arguments", strings.Join(gateway.ClientNames(), ", "), len(pos))
	}
	safeOutput(e, false)
	g, closeFn, code, ok := openGateway(e, "uninstall", "")
	if !ok {
		return code
	}
	defer closeFn()
	p, err := g.PlanUninstall(pos[0], *file, *forget)
	if err != nil {
		return reportErr(e.stderr, "uninstall", err)
	}
	return applyPlan(e, "uninstall", p, *yes, *dry)
}

func applyPlan(e *env, cmd string, p *gateway.InstallPlan, yes, dry bool) int {
	if p.Already != "" {
		fmt.Fprintf(e.stdout, "Nothing to do: %s.\n", p.Already)
		return exitOK
	}
	switch {
	case p.Forget:
		fmt.Fprintf(e.stdout, "%s: forget the install record (the file is not touched)\n", p.File)
	case p.Diff != "":
		fmt.Fprintf(e.stdout, "%s:\n", p.File)
		printFileDiff(e.stdout, p.Diff)
	}
	for _, r := range p.Removed {
		fmt.Fprintf(e.stdout, "removes %s (now served through sluice)\n", r)
	}
	for _, k := range p.Kept {
		fmt.Fprintf(e.stdout, "keeps %s\n", cleanLine(k))
	}
	if dry {
		fmt.Fprintln(e.stdout, "Dry run: nothing written.")
		return exitOK
	}
	if !yes && isTerminal(e.stdin) {
		fmt.Fprintf(e.stderr, "Write %s? [y/N] ", p.File)
		if !readYes(e.stdin) {
			fmt.Fprintf(e.stderr, "sluice %s: nothing written\n", cmd)
			return exitFailure
		}
	}
	if err := p.Apply(); err != nil {
		return reportErr(e.stderr, cmd, err)
	}
	if cmd == "install" {
		fmt.Fprintf(e.stdout, "Installed: %s runs sluice from %s; restart %s to pick it up. 'sluice uninstall %s' restores the file.\n", p.Client, p.File, p.Client, p.Client)
	} else if p.Forget {
		fmt.Fprintf(e.stdout, "Forgotten: sluice no longer remembers installing into %s.\n", p.File)
	} else {
		fmt.Fprintf(e.stdout, "Restored: %s is as it was before 'sluice install %s'.\n", p.File, p.Client)
	}
	return exitOK
}
