package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"sluice/gateway"
)

func init() {
	register("find", &command{
		summary: "search the tools of every declared server (from recorded catalogs)",
		help: `Usage: sluice find [QUERY...] [--server ID] [--refresh] [--limit N] [--json] [--project DIR] [--profile NAME]

Lists the servers (trust, action class, where their tool list came from, run
status, and the exact fix when a server has no tools to show), then the tools,
ranked by how well they match QUERY (name first, then title, then
description). Without a query every tool is listed.

find answers from recorded tool catalogs and launches nothing. A server with
no recorded catalog shows provenance "missing" and the command that records
one: a scoped refresh, which launches exactly that server once:

  sluice find --server ID --refresh

Untrusted and stale project servers show no tools and are never launched,
not even by --refresh; their line names the 'sluice trust' command.

Provenance: live (listed by a server running in this process), cached (read
from a recorded catalog), missing (nothing recorded yet).

Flags:
  --server ID    only this server
  --refresh      launch the server named by --server, list its tools and
                 record its catalog (progress is shown on stderr when stderr
                 is a terminal; see --progress in 'sluice help')
  --limit N      at most N tools (default 50 with a query, all without)
  --json         print the answer as JSON: {"query", "servers": [...],
                 "tools": [...], "more"}
  --project DIR  the project root (default: found from the working directory)
` + profileHelp + `

` + exitCodeHelp,
		run: runFind,
	})
}

func runFind(e *env) int {
	// find reads a few kilobytes of index per server and exits: with the
	// default GOGC the collector ran several cycles over 32 servers x 500
	// tools (a quarter of its CPU time, measured); its heap stays within
	// five times what it holds.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	fs := flag.NewFlagSet("find", flag.ContinueOnError)
	server := fs.String("server", "", "")
	refresh := fs.Bool("refresh", false, "")
	limit := intFlag(fs, "limit", 0, 0, math.MaxInt)
	asJSON := fs.Bool("json", false, "")
	project := fs.String("project", "", "")
	profile := fs.String("profile", "", "")
	pos, code, ok := flagsOrExit(e, "find", fs)
	if !ok {
		return code
	}
	if *refresh && *server == "" {
		return usageErr(e, "find", "--refresh launches a server and needs one named: pass --server ID (an ordinary find launches nothing)")
	}
	// Listings show tool names, descriptions and schemas servers wrote:
	// nothing of theirs reaches the terminal raw (see clean).
	e.stdout = escapingWriter{w: e.stdout, json: *asJSON}
	g, closeFn, code, ok := openGatewayProfile(e, "find", *project, *profile)
	if !ok {
		return code
	}
	defer closeFn()
	ctx, cancel := interruptible()
	defer cancel()

	var prog *reporter
	if *refresh {
		prog = newReporter(e, "find")
		prog.Set("refreshing %s", *server)
	}
	res, err := g.Find(ctx, gateway.FindRequest{Query: strings.Join(pos, " "), Server: *server, Refresh: *refresh, Limit: *limit})
	prog.Stop()
	if res != nil {
		if *asJSON {
			if werr := writeJSON(e.stdout, res); werr != nil && err == nil {
				err = werr
			}
		} else {
			printFind(e.stdout, res)
		}
	}
	if err != nil {
		return failed(ctx, e.stderr, "find", err)
	}
	return exitOK
}

func printFind(w io.Writer, res *gateway.FindResult) {
	if len(res.Servers) == 0 {
		fmt.Fprintln(w, "No servers declared; run 'sluice servers' to see where declarations are read from.")
		return
	}
	fmt.Fprintln(w, "Servers:")
	var rows []string
	for _, s := range res.Servers {
		tools := "-"
		if s.Provenance != gateway.ProvMissing {
			tools = plural(s.Tools, "tool")
			if s.Truncated {
				tools += " (truncated)"
			}
		}
		when := ""
		if s.RecordedAt != nil {
			when = "recorded " + s.RecordedAt.Local().Format(time.DateTime)
		}
		rows = append(rows, fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%s\t%s", s.ID, s.Trust, s.ActionClass, s.Provenance, s.Run, tools, when))
	}
	table(w, rows)
	for _, s := range res.Servers {
		if s.Reason == "" && s.Remedy == "" && s.Error == "" {
			continue
		}
		fmt.Fprintf(w, "  %s:", s.ID)
		if s.Reason != "" {
			fmt.Fprintf(w, " %s", s.Reason)
		}
		if s.Error != "" {
			fmt.Fprintf(w, " error: %s", indentRest(clean(s.Error), "    "))
		}
		fmt.Fprintln(w)
		if s.Remedy != "" {
			fmt.Fprintf(w, "    fix: %s\n", s.Remedy)
		}
	}
	fmt.Fprintln(w)
	if len(res.Tools) == 0 {
		if res.Query != "" {
			fmt.Fprintf(w, "No tools match %q.\n", res.Query)
		} else {
			fmt.Fprintln(w, "No tools known yet.")
		}
		return
	}
	if res.Query != "" {
		fmt.Fprintf(w, "Tools matching %q (best first):\n", res.Query)
	} else {
		fmt.Fprintln(w, "Tools:")
	}
	rows = rows[:0]
	for _, t := range res.Tools {
		desc := t.Description
		if t.Title != "" && !strings.EqualFold(t.Title, t.Tool) {
			desc = t.Title + " — " + desc
		}
		ro := ""
		if t.ReadOnly {
			ro = "[read-only]"
		}
		// One line per tool: tabs and newlines in server text would break
		// the alignment.
		desc = strings.Join(strings.Fields(clean(desc)), " ")
		rows = append(rows, fmt.Sprintf("  %s\t%s\t%s", clean(t.Capability), ro, desc))
	}
	table(w, rows)
	if res.More > 0 {
		fmt.Fprintf(w, "  … %d more; narrow the query or raise --limit\n", res.More)
	}
}
