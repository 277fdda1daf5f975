package main

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"sluice/gateway"
)

func init() {
	register("auth", &command{
		summary: "authorize sluice with a remote server's OAuth (opens a browser), or --logout",
		help: `Usage: sluice auth SERVER [--no-browser] [--timeout DURATION] [--project DIR]
       sluice auth SERVER --logout

Runs the MCP authorization flow for a remote (url) server: sluice asks the
server which authorization server protects it, identifies itself (the
declared oauth.clientId, a client metadata document, or dynamic
registration), and opens your browser at the authorization page. After you
approve, the browser returns to a one-time listener on 127.0.0.1 and sluice
stores the tokens under the state directory (one 0600 file per server).
Calls refresh them automatically; run this again when a server asks for
more scopes (when a command runs at a terminal, sluice asks for the larger
scope in place, through the browser). With oauth.grant: client_credentials
no browser is involved.

Tokens are never printed or logged.

Flags:
  --no-browser        print the authorization URL instead of opening a browser
  --timeout DURATION  how long to wait for the browser to return (default 5m)
  --logout            forget the server's tokens and client registration
  --project DIR       the project root (default: found from the working directory)

At a terminal the wait for the browser is shown on stderr with the time it
has taken (--progress=never turns that off).

Exit status:
  0  authorized (or, with --logout, forgotten)
  1  the flow failed
  2  bad flags or arguments
  4  the server is untrusted
`,
		run: runAuth,
	})
}

func runAuth(e *env) int {
	fs := flag.NewFlagSet("auth", flag.ContinueOnError)
	noBrowser := fs.Bool("no-browser", false, "")
	logout := fs.Bool("logout", false, "")
	timeout := fs.Duration("timeout", 5*time.Minute, "")
	project := fs.String("project", "", "")
	pos, code, ok := flagsOrExit(e, "auth", fs)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(e, "auth", "name one remote server: sluice auth SERVER")
	}
	if *timeout <= 0 {
		return usageErr(e, "auth", "--timeout must be a positive duration such as 5m, got %s", *timeout)
	}
	id := pos[0]
	g, closeFn, code, ok := openGateway(e, "auth", *project)
	if !ok {
		return code
	}
	defer closeFn()
	if *logout {
		had, err := g.Logout(id)
		if err != nil {
			return reportErr(e.stderr, "auth", err)
		}
		if had {
			fmt.Fprintf(e.stdout, "Forgot the tokens of %s.\n", id)
		} else {
			fmt.Fprintf(e.stdout, "No tokens were stored for %s.\n", id)
		}
		return exitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var wait *reporter
	var waitMu sync.Mutex // the redirect listener's Notice runs on its own goroutine
	defer func() { waitMu.Lock(); wait.Stop(); waitMu.Unlock() }()
	notice := func(m string) {
		waitMu.Lock()
		defer waitMu.Unlock()
		if wait != nil {
			wait.Note("%s", m)
			return
		}
		fmt.Fprintf(e.stderr, "sluice auth: %s\n", clean(m))
	}
	open := func(u string) error {
		waitMu.Lock()
		defer waitMu.Unlock()
		fmt.Fprintf(e.stderr, "To authorize sluice with %s, open this URL:\n\n  %s\n\n", id, u)
		if !*noBrowser {
			if err := openBrowser(u); err != nil {
				fmt.Fprintf(e.stderr, "(could not open a browser: %v)\n", err)
			}
		}
		// At a terminal the wait is a line that counts the time; in a
		// log, one line says what sluice waits for.
		wait.Stop()
		if wait = newReporter(e, "auth"); wait != nil {
			wait.Set("waiting for the browser to return (up to %s; Ctrl-C cancels)", *timeout)
		} else {
			fmt.Fprintf(e.stderr, "Waiting for the browser to return (up to %s) ...\n", *timeout)
		}
		return nil
	}
	err := g.Auth(ctx, id, gateway.AuthOptions{Open: open, Timeout: *timeout, Notice: notice})
	waitMu.Lock()
	wait.Stop()
	waitMu.Unlock()
	if err != nil {
		return reportErr(e.stderr, "auth", err)
	}
	fmt.Fprintf(e.stdout, "Authorized: %s (tokens stored under %s)\n", id, g.StateDir())
	return exitOK
}

// openBrowser starts the platform's URL opener, without a shell. A
// variable so tests can play the browser.
var openBrowser = func(u string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, u)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
