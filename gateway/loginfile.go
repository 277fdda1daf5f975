package gateway

// This file keeps the dashboard's login-link files in the state
// directory: one per process that made a token and could not print it
// (cmd/sluice's dashLogin decides when), readable by the user only, held
// while the process lives and swept once it is gone.
//
// # Why a lock says a login file is live
//
// A file removed when its process ends is left behind when the process
// is killed (SIGKILL from an MCP client, a crash), still holding a token,
// dead but still a token, and a pid in its name proves nothing: another
// process may have the pid by now, or two processes in different pid
// namespaces (containers sharing a home) may have the same one. So the
// process keeps an exclusive lock on the open file for as long as it
// lives (the kernel drops it when the process dies, however it dies), and
// a file nobody holds is stale: it is removed at the next start and by
// 'sluice status'. The name has a random part as well as the pid, so two
// processes never write the same file.

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// LoginFile is a login-link file held by this process.
type LoginFile struct {
	Path string
	f    *os.File
}

const loginPrefix, loginSuffix = "dashboard-", ".login"

// WriteLoginFile writes data to a new login file of this process in
// stateDir (created private), 0600, whole or not at all, and holds it
// until Remove. Stale files of processes that are gone are swept first.
func WriteLoginFile(stateDir string, data []byte) (_ *LoginFile, err error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	SweepLoginFiles(stateDir)
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, loginPrefix+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(rnd[:])+loginSuffix)
	f, err := os.CreateTemp(stateDir, "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// Held before it has its name: a sweep never sees it unheld.
	if err = holdFile(f); err != nil {
		return nil, err
	}
	if err = f.Chmod(0o600); err != nil {
		return nil, err
	}
	if _, err = f.Write(data); err != nil {
		return nil, err
	}
	if err = f.Sync(); err != nil {
		return nil, err
	}
	if !loginLocks {
		if err = f.Close(); err != nil {
			return nil, err
		}
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return nil, err
	}
	if !loginLocks {
		return &LoginFile{Path: path}, nil
	}
	return &LoginFile{Path: path, f: f}, nil
}

// Remove removes the file and lets it go.
func (l *LoginFile) Remove() {
	if l == nil || l.Path == "" {
		return
	}
	_ = os.Remove(l.Path)
	if l.f != nil {
		l.f.Close()
	}
	l.Path, l.f = "", nil
}

// SweepLoginFiles removes the login files in stateDir that no live
// process holds, and returns those that one does, sorted.
func SweepLoginFiles(stateDir string) []string {
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		return nil
	}
	var live []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, loginPrefix) || !strings.HasSuffix(name, loginSuffix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(stateDir, name)
		if held, known := heldElsewhere(p); known && !held {
			_ = os.Remove(p)
			continue
		}
		live = append(live, p)
	}
	sort.Strings(live)
	return live
}

// LiveLoginFile is the login file that the process pid holds in stateDir,
// "" when there is none; stale files are swept on the way.
func LiveLoginFile(stateDir string, pid int) string {
	for _, p := range SweepLoginFiles(stateDir) {
		if strings.HasPrefix(filepath.Base(p), loginPrefix+strconv.Itoa(pid)+"-") {
			return p
		}
	}
	return ""
}
