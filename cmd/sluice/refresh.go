package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"sluice/gateway"
)

func init() {
	register("refresh", &command{
		summary: "launch servers once, list their tools and record their catalogs",
		help: `Usage: sluice refresh [SERVER...] [--parallel N] [--json] [--project DIR]

Records a fresh tool catalog for each named server, or for every declared
server without names: it launches the server (if it is not running),
lists its tools, records the catalog that find, describe and code mode
answer from, and stops it again. This is 'sluice find --server ID
--refresh' for many servers at once.

Untrusted and stale project servers are never launched: they are listed as
skipped with the 'sluice trust' command that fixes them. A listing that
differs from the reviewed baseline is recorded, and its changed tools stay
held until 'sluice review SERVER --accept'.

Progress ("[2/5] refreshing fs, github 1.2s") is drawn on stderr when
stderr is a terminal (--progress=always prints it as plain lines, for a
log); stdout gets one line per server, or JSON with --json.

Flags:
  --parallel N   refresh at most N servers at a time (default 4, 1..32)
  --json         print {"servers": [{"id", "outcome", "tools", ...}]}
  --project DIR  the project root (default: found from the working directory)

Exit status:
  0  every server was refreshed (or had nothing to refresh)
  1  a server failed to launch or list its tools
  2  bad input: flags, an unknown server
  4  a named server is untrusted or stale (nothing failed otherwise)
  130  interrupted; every launched server was stopped
`,
		run: runRefresh,
	})
}

// refreshed is one server's outcome.
type refreshed struct {
	ID         string              `json:"id"`
	Outcome    string              `json:"outcome"` // refreshed | failed | skipped
	Tools      int                 `json:"tools"`
	ToolChange *gateway.ToolChange `json:"toolChange,omitempty"`
	Error      string              `json:"error,omitempty"`
	Remedy     string              `json:"remedy,omitempty"`
	Duration   int64               `json:"durationMs"`
	named      bool
}

const maxRefreshParallel = 32

func runRefresh(e *env) int {
	fs := flag.NewFlagSet("refresh", flag.ContinueOnError)
	parallel := intFlag(fs, "parallel", 4, 1, maxRefreshParallel)
	asJSON := fs.Bool("json", false, "")
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "refresh", fs)
	if !ok {
		return code
	}
	safeOutput(e, *asJSON)
	g, closeFn, code, ok := openGateway(e, "refresh", *project)
	if !ok {
		return code
	}
	defer closeFn()

	rep := g.Servers()
	var ids []string
	named := map[string]bool{}
	if len(pos) == 0 {
		for _, v := range rep.Servers {
			ids = append(ids, v.ID)
		}
	} else {
		known := map[string]bool{}
		var all []string
		for _, v := range rep.Servers {
			known[v.ID] = true
			all = append(all, v.ID)
		}
		for _, id := range pos {
			if !known[id] {
				if d, ok := declError(rep, id); ok {
					fmt.Fprintf(e.stderr, "sluice refresh: server %q is declared but not loaded: its declaration has an error:\n  %s\n  fix it, then run 'sluice check'\n", id, cleanLine(d.String()))
					return exitUsage
				}
				msg := fmt.Sprintf("no server %q is declared", id)
				if near := gateway.Suggest(id, all); near != "" {
					msg += "; did you mean " + near + "?"
				}
				msg += gateway.BrokenFileNote(rep.Diagnostics)
				return usageErr(e, "refresh", "%s", msg)
			}
			if !named[id] {
				named[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		fmt.Fprintf(e.stdout, "No servers are declared; nothing to refresh. Declare one under 'servers:' in %s\n", rep.UserFile)
		return exitOK
	}

	ctx, cancel := interruptible()
	defer cancel()
	prog := newReporter(e, "refresh")
	var (
		mu      sync.Mutex
		running = map[string]bool{}
		done    int
		out     = make([]refreshed, len(ids))
	)
	show := func() {
		names := make([]string, 0, len(running))
		for n := range running {
			names = append(names, n)
		}
		sort.Strings(names)
		prog.Set("[%d/%d] refreshing %s", done, len(ids), listShort(names))
	}
	sem := make(chan struct{}, *parallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			mu.Lock()
			running[id] = true
			show()
			mu.Unlock()
			out[i] = refreshOne(ctx, g, id)
			out[i].named = named[id]
			mu.Lock()
			delete(running, id)
			done++
			if len(running) > 0 {
				show()
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	prog.Stop()
	if ctx.Err() != nil {
		fmt.Fprintln(e.stderr, "sluice refresh: interrupted; launched servers were stopped")
		return exitInterrupted
	}

	if *asJSON {
		if err := writeJSON(e.stdout, map[string]any{"servers": out}); err != nil {
			return reportErr(e.stderr, "refresh", err)
		}
	} else {
		printRefresh(e, out)
	}
	code = exitOK
	for _, r := range out {
		switch {
		case r.Outcome == "failed":
			return exitFailure
		case r.Outcome == "skipped" && r.named:
			code = exitRefused
		}
	}
	return code
}

// refreshOne refreshes one server through find's scoped refresh.
func refreshOne(ctx context.Context, g *gateway.Gateway, id string) refreshed {
	start := time.Now()
	res, err := g.Find(ctx, gateway.FindRequest{Server: id, Refresh: true, Limit: 1})
	r := refreshed{ID: id, Outcome: "refreshed"}
	if res != nil && len(res.Servers) == 1 {
		s := res.Servers[0]
		r.Tools, r.ToolChange = s.Tools, s.ToolChange
		if s.Trust != "trusted" {
			r.Outcome, r.Error, r.Remedy = "skipped", s.Trust+": "+s.Reason, s.Remedy
			r.Duration = time.Since(start).Milliseconds()
			return r
		}
	}
	if err != nil {
		r.Outcome, r.Error = "failed", err.Error()
		var ge *gateway.Error
		if errors.As(err, &ge) {
			r.Error = ge.Message
			if !ge.Remedy.IsZero() {
				r.Remedy = ge.Remedy.String()
			}
		}
	}
	r.Duration = time.Since(start).Milliseconds()
	return r
}

// listShort names at most 4 servers: "a, b, c, d and 3 more".
func listShort(names []string) string {
	if len(names) > 4 {
		return strings.Join(names[:4], ", ") + fmt.Sprintf(" and %d more", len(names)-4)
	}
	return strings.Join(names, ", ")
}

func printRefresh(e *env, out []refreshed) {
	w := e.stdout
	rows := [][]string{{"SERVER", "RESULT", "TOOLS", "TIME", "NOTE"}}
	counts := map[string]int{}
	for _, r := range out {
		counts[r.Outcome]++
		note := ""
		switch {
		case r.Error != "":
			note = firstLineOf(r.Error)
		case r.ToolChange != nil:
			note = r.ToolChange.Summary
		}
		tools := fmt.Sprint(r.Tools)
		if r.Outcome != "refreshed" {
			tools = "-"
		}
		rows = append(rows, []string{r.ID, r.Outcome, tools, elapsed(time.Duration(r.Duration) * time.Millisecond), note})
	}
	styledTable(w, rows, func(row, col int, cell string) string {
		switch {
		case row == 0:
			return styleBold
		case col == 1 && cell == "refreshed":
			return styleGreen
		case col == 1 && cell == "failed":
			return styleRed
		case col == 1 && cell == "skipped":
			return styleYellow
		case col == 4 && out[row-1].ToolChange != nil && out[row-1].Error == "":
			return styleYellow
		}
		return ""
	})
	var fixes []string
	for _, r := range out {
		switch {
		case r.Remedy != "":
			fixes = append(fixes, fmt.Sprintf("%s: fix: %s", r.ID, r.Remedy))
		case r.ToolChange != nil && len(r.ToolChange.Held) > 0:
			fixes = append(fixes, fmt.Sprintf("%s: fix: run 'sluice review %s' to see the change and 'sluice review %s --accept' to accept it", r.ID, r.ID, r.ID))
		}
	}
	if len(fixes) > 0 {
		fmt.Fprintln(w)
		for _, f := range fixes {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	fmt.Fprintf(w, "\n%d refreshed, %d failed, %d skipped\n", counts["refreshed"], counts["failed"], counts["skipped"])
}

// declError is the first error of server id's declaration in rep (ok
// false when it has none).
func declError(rep *gateway.Report, id string) (gateway.Diagnostic, bool) {
	for _, d := range rep.Diagnostics {
		if d.Severity == "error" && (d.Field == "servers."+id || strings.HasPrefix(d.Field, "servers."+id+".")) {
			return d, true
		}
	}
	return gateway.Diagnostic{}, false
}
