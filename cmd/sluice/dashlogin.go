package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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
// file only the user can read (0600, in the state directory, replaced
// atomically), stderr names the file, and the file is removed when the
// process ends.
type dashLogin struct {
	cmd      string // "serve" or "dashboard": the message's prefix
	stateDir string
	terminal bool

	mu   sync.Mutex
	file string // written, to remove at the end
}

// loginFileName is the file of a process's login link in the state
// directory.
func loginFileName(pid int) string { return "dashboard-" + strconv.Itoa(pid) + ".login" }

// note is the text after the dashboard's address: how to log in. It is ""
// when the operator gave the token (they have it already).
func (d *dashLogin) note(login string) string {
	if login == "" {
		return ""
	}
	if d.terminal {
		return " (log in: " + login + " — a token made for this process, shown here only)"
	}
	path := filepath.Join(d.stateDir, loginFileName(os.Getpid()))
	if err := writePrivate(path, []byte(login+"\n")); err != nil {
		return fmt.Sprintf(" (the login link could not be written to %s: %v; it is not printed because stderr is not a terminal: fix the directory, or give the token with --token-file FILE or SLUICE_TOKEN)", path, err)
	}
	d.mu.Lock()
	d.file = path
	d.mu.Unlock()
	return " (log in with the link in " + path + ", readable by you only and removed when this process ends; it is not printed because stderr is not a terminal)"
}

// done removes the login file.
func (d *dashLogin) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.file != "" {
		_ = os.Remove(d.file)
		d.file = ""
	}
}

// writePrivate writes data to path readable by the user only, atomically:
// a reader sees the old file or the whole new one, never a part, and an
// interruption leaves at most a temporary file that is removed.
func writePrivate(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
