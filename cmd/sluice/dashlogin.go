package main

import (
	"fmt"
	"sync"

	"sluice/gateway"
)

// dashLogin tells the operator how to log in to a dashboard whose token
// sluice made for this process.
//
// # Why the link goes to a file unless stderr is a terminal
//
// The login link carries the token. An MCP client that starts 'sluice
// serve --admin' keeps sluice's stderr in its own log files, where anyone
// who can read them (or a bug report that quotes them) would get a login
// to a dashboard that runs tools and trusts servers. So the link is
// printed only to a person at a terminal; otherwise it is written to a
// file only the user can read (0600, in the state directory, written
// whole or not at all), stderr names the file, and the file is removed
// when the process ends, or by the next start or 'sluice status' when the
// process was killed (gateway.WriteLoginFile: the process holds a lock on
// it while it lives).
type dashLogin struct {
	cmd      string // "serve" or "dashboard": the message's prefix
	stateDir string
	terminal bool

	mu   sync.Mutex
	file *gateway.LoginFile // written, to remove at the end
}

// note is the text after the dashboard's address: how to log in. It is ""
// when the operator gave the token (they have it already).
func (d *dashLogin) note(login string) string {
	if login == "" {
		return ""
	}
	if d.terminal {
		return " (log in: " + login + " — a token made for this process, shown here only)"
	}
	lf, err := gateway.WriteLoginFile(d.stateDir, []byte(login+"\n"))
	if err != nil {
		return fmt.Sprintf(" (the login link could not be written to a file in %s: %v; it is not printed because stderr is not a terminal: fix the directory, or give the token with --token-file FILE or SLUICE_TOKEN)", d.stateDir, err)
	}
	d.mu.Lock()
	d.file = lf
	d.mu.Unlock()
	return " (log in with the link in " + lf.Path + ", readable by you only and removed when this process ends; it is not printed because stderr is not a terminal)"
}

// done removes the login file.
func (d *dashLogin) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.file.Remove()
	d.file = nil
}
