package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"sluice/gateway"
)

func init() {
	register("dashboard", &command{
		summary: "serve the dashboard alone (servers, tools, filters, results)",
		help: `Usage: sluice dashboard [ADDR] [--admin-remote] [--token-file FILE] [--project DIR]

Serves the dashboard at http://ADDR/admin/ (default 127.0.0.1:8765) without
serving MCP: servers and their trust, tools (search, describe, call, code
mode), filters, offloaded results. It answers loopback clients only unless
--admin-remote is given, and asks for a token once: the one given
(--token-file or SLUICE_TOKEN), else one made for this process. The login
link of a token made for the process (ADDR/admin/login#token=...) is
printed on stderr when stderr is a terminal; otherwise (a service manager,
a log file) it is written to <state dir>/dashboard-PID-RANDOM.login,
readable by you only and removed when the process ends (or, after a
kill, by the next start or 'sluice status'), and stderr names that file.
Ends on SIGTERM, SIGINT or SIGHUP.

Flags:
  --admin-remote      allow a non-loopback ADDR and clients (needs a token)
  --token-file FILE   require this token (first line) once, at login
  --project DIR       the project root (default: found from the working
                      directory)

Exit status:
  0    ended on SIGTERM, SIGINT or SIGHUP
  1    sluice failed (unreadable files)
  2    bad flags, or an address it may not or cannot listen on
`,
		run: runDashboard,
	})
	register("status", &command{
		summary: "show the state of the running sluice serve processes",
		help: `Usage: sluice status [--json]

Asks every running 'sluice serve' of this user (over its private status
socket) for its state: transport, dashboard address (and the file that
holds its login link, when the link was not printed), servers, calls so
far, pending approvals and filters. --json gives each serve's state as
one object ("loginFile" names the login link's file, when there is one).

Exit status:
  0    at least one serve answered
  1    no serve is running
`,
		run: runStatus,
	})
}

func runDashboard(e *env) int {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	remote := fs.Bool("admin-remote", false, "")
	tokenFile := fs.String("token-file", "", "")
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "dashboard", fs)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageErr(e, "dashboard", "unexpected argument %q", pos[1])
	}
	addr := "127.0.0.1:8765"
	if len(pos) == 1 {
		addr = pos[0]
	}
	token, err := readToken(*tokenFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice dashboard: %v\n", err)
		return exitUsage
	}
	if *remote && token == "" {
		return usageErr(e, "dashboard", "--admin-remote needs a token (the dashboard runs tools and trusts servers): add --token-file FILE or set SLUICE_TOKEN")
	}
	lockStderr(e)
	log := slog.New(newLogHandler(e.stderr, logLevel(e.stderr)))
	g, err := gateway.Open(&gateway.Options{Project: *project, Logger: log, ClientName: "sluice", ClientVersion: versionString()})
	if err != nil {
		return reportErr(e.stderr, "dashboard", err)
	}
	dl := &dashLogin{stateDir: g.StateDir(), terminal: isTerminal(e.stderr)}
	defer dl.done()
	err = gateway.Dashboard(context.Background(), g, gateway.DashboardOptions{Addr: addr, Remote: *remote, Token: token, PlanText: planText, Version: versionString(),
		OnListen: func(base, login string) {
			fmt.Fprintf(e.stderr, "sluice dashboard: %s/admin/%s\n", base, dl.note(login))
		}})
	if err != nil {
		return reportErr(e.stderr, "dashboard", err)
	}
	return exitOK
}

// planText is the trust prompt as 'sluice trust' prints it, for the
// dashboard's trust page.
func planText(p *gateway.TrustPlan) string {
	var b bytes.Buffer
	printPlan(&b, p)
	return b.String()
}

// withLoginFile adds "loginFile" (the file that holds a serve's dashboard
// login link) to the end of a serve's status object, keeping its members
// in their order.
func withLoginFile(raw json.RawMessage, file string) json.RawMessage {
	b := bytes.TrimRight(raw, " \t\r\n")
	if len(b) < 2 || b[len(b)-1] != '}' {
		return raw
	}
	v, _ := json.Marshal(file)
	out := append([]byte(nil), b[:len(b)-1]...)
	if len(bytes.TrimSpace(b[1:len(b)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"loginFile":`...)
	out = append(out, v...)
	return append(out, '}')
}

func runStatus(e *env) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	pos, code, ok := flagsOrExit(e, "status", fs)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(e, "status", "unexpected argument %q", pos[0])
	}
	g, err := gateway.Open(&gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return reportErr(e.stderr, "status", err)
	}
	stateDir := g.StateDir()
	g.Close()
	gateway.SweepLoginFiles(stateDir) // those of serves that were killed
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := gateway.LiveServeStatuses(ctx, stateDir)
	if errors.Is(err, gateway.ErrNoServe) {
		fmt.Fprintln(e.stderr, "sluice status: no sluice serve is running (start one with 'sluice serve')")
		return exitFailure
	}
	if err != nil {
		return reportErr(e.stderr, "status", err)
	}
	if *asJSON {
		for i, raw := range all {
			var p struct {
				PID int `json:"pid"`
			}
			if json.Unmarshal(raw, &p) != nil || p.PID <= 0 {
				continue
			}
			if f := gateway.LiveLoginFile(stateDir, p.PID); f != "" {
				all[i] = withLoginFile(raw, f)
			}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(all)
		return exitOK
	}
	for _, raw := range all {
		var s struct {
			PID       int       `json:"pid"`
			Started   time.Time `json:"started"`
			Transport string    `json:"transport"`
			HTTP      string    `json:"http"`
			Dashboard string    `json:"dashboard"`
			Calls     int64     `json:"calls"`
			Pending   int       `json:"pending"`
			Servers   []struct {
				ID, Scope, Trust, Run, Provenance string
				Tools                             int
			} `json:"servers"`
			Filters []struct {
				Name, State     string
				Calls, Failures int64
			} `json:"filters"`
		}
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		fmt.Fprintf(e.stdout, "sluice serve pid %d, up %s", s.PID, time.Since(s.Started).Round(time.Second))
		if s.Transport != "" {
			fmt.Fprintf(e.stdout, ", %s", s.Transport)
		}
		if s.HTTP != "" {
			fmt.Fprintf(e.stdout, " on %s", s.HTTP)
		}
		fmt.Fprintln(e.stdout)
		if s.Dashboard != "" {
			fmt.Fprintf(e.stdout, "  dashboard: %s\n", s.Dashboard)
			if f := gateway.LiveLoginFile(stateDir, s.PID); f != "" {
				fmt.Fprintf(e.stdout, "  login link: in %s (readable by you only)\n", f)
			}
		} else {
			fmt.Fprintln(e.stdout, "  dashboard: none (serve --http, or --admin ADDR)")
		}
		fmt.Fprintf(e.stdout, "  calls: %d   pending approvals: %d\n", s.Calls, s.Pending)
		for _, v := range s.Servers {
			fmt.Fprintf(e.stdout, "  server %-16s %-8s %-10s %-12s %s, %d tools\n", v.ID, v.Scope, v.Trust, v.Run, v.Provenance, v.Tools)
		}
		for _, f := range s.Filters {
			fmt.Fprintf(e.stdout, "  filter %-16s %-10s calls %d, failures %d\n", f.Name, f.State, f.Calls, f.Failures)
		}
	}
	return exitOK
}
