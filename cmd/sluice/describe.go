package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"sluice/gateway"
)

func init() {
	register("describe", &command{
		summary: "show one capability (schemas, annotations, trust, admission) or a server's code-mode docs",
		help: `Usage: sluice describe CAPABILITY [--json] [--project DIR] [--profile NAME]
       sluice describe --docs SERVER [--json] [--project DIR]

Shows everything sluice knows about one capability (SERVER__TOOL, as listed by
'sluice find'): title and description, the full input and output schemas
(pretty-printed, numbers exactly as the server sent them), annotations, the
server and its trust status, the effective action class and whether a call
runs or needs approval, where the listing came from (live or cached), and the
code-mode module and signature when there are any.

With --docs, shows one server's code-mode docs instead: its module name and
every tool as a Starlark signature with a one-line summary (what a script
for 'sluice run' can call).

describe reads the recorded catalog and launches nothing. A server with no
recorded catalog is reported with the command that records one
('sluice find --server ID --refresh').

Flags:
  --docs         SERVER is a server id: print its code-mode docs
  --json         print the description as JSON
  --project DIR  the project root (default: found from the working directory)
` + profileHelp + `

` + exitCodeHelp,
		run: runDescribe,
	})
}

func runDescribe(e *env) int {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	docs := fs.Bool("docs", false, "")
	project := fs.String("project", "", "")
	profile := fs.String("profile", "", "")
	pos, code, ok := flagsOrExit(e, "describe", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		if *docs {
			return usageErr(e, "describe", "want exactly one server id after --docs, got %d arguments", len(pos))
		}
		return usageErr(e, "describe", "want exactly one capability (SERVER__TOOL), got %d arguments", len(pos))
	}
	// Listings show tool names, descriptions and schemas servers wrote:
	// nothing of theirs reaches the terminal raw (see clean).
	e.stdout = escapingWriter{w: e.stdout, json: *asJSON}
	g, closeFn, code, ok := openGatewayProfile(e, "describe", *project, *profile)
	if !ok {
		return code
	}
	defer closeFn()
	ctx, cancel := interruptible()
	defer cancel()
	if *docs {
		text, err := g.Docs(ctx, pos[0])
		if err != nil {
			return reportErr(e.stderr, "describe", err)
		}
		if *asJSON {
			if err := writeJSON(e.stdout, map[string]string{"server": pos[0], "docs": text}); err != nil {
				return reportErr(e.stderr, "describe", err)
			}
			return exitOK
		}
		fmt.Fprint(e.stdout, clean(strings.TrimRight(text, "\n"))+"\n")
		return exitOK
	}
	if near := separatorSlip(g, pos[0]); near != "" {
		return usageErr(e, "describe", "%q is not a capability name (SERVER__TOOL, with two underscores); did you mean %s?", pos[0], near)
	}
	d, err := g.Describe(ctx, pos[0])
	if err != nil {
		return reportErr(e.stderr, "describe", err)
	}
	if *asJSON {
		if err := writeJSON(e.stdout, d); err != nil {
			return reportErr(e.stderr, "describe", err)
		}
		return exitOK
	}
	printDetail(e.stdout, d)
	return exitOK
}

func printDetail(w io.Writer, d *gateway.ToolDetail) {
	fmt.Fprintf(w, "%s\n", clean(d.Capability))
	if d.Title != "" {
		fmt.Fprintf(w, "  title:        %s\n", clean(d.Title))
	}
	fmt.Fprintf(w, "  server:       %s (trust: %s)\n", d.Server, d.Trust)
	fmt.Fprintf(w, "  tool:         %s\n", clean(d.Tool))
	adm := d.Admission
	if adm == "approval-required" {
		adm += " (pass --yes to 'sluice call', or add it to 'approve:' in the user file)"
	}
	fmt.Fprintf(w, "  action class: %s\n", d.ActionClass)
	fmt.Fprintf(w, "  admission:    %s\n", adm)
	fmt.Fprintf(w, "  provenance:   %s\n", d.Provenance)
	if d.Module != "" {
		fmt.Fprintf(w, "  module:       %s\n", d.Module)
	}
	if d.Signature != "" {
		fmt.Fprintf(w, "  signature:    %s\n", clean(d.Signature))
	}
	if desc := strings.TrimSpace(clean(d.Description)); desc != "" {
		fmt.Fprintf(w, "\nDescription:\n  %s\n", indentRest(desc, "  "))
	}
	if len(d.Annotations) > 0 {
		fmt.Fprintf(w, "\nAnnotations:\n  %s\n", clean(pretty(d.Annotations, "  ")))
	}
	fmt.Fprintf(w, "\nInput schema:\n")
	if len(d.InputSchema) > 0 {
		fmt.Fprintf(w, "  %s\n", clean(pretty(d.InputSchema, "  ")))
	} else {
		fmt.Fprintf(w, "  (none given)\n")
	}
	if len(d.OutputSchema) > 0 {
		fmt.Fprintf(w, "\nOutput schema:\n  %s\n", clean(pretty(d.OutputSchema, "  ")))
	}
}
