package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAdminRemoteNeedsToken: a dashboard open to other machines without a
// login would run tools and trust servers for anyone; every command that
// serves one refuses --admin-remote without a token, naming the fix.
func TestAdminRemoteNeedsToken(t *testing.T) {
	w := newWorld(t)
	w.writeUser("servers:\n" + fixture(t, "fx"))
	for _, args := range [][]string{
		{"serve", "--http", "127.0.0.1:0", "--admin-remote"},
		{"serve", "--admin", "127.0.0.1:0", "--admin-remote"},
		{"serve", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--admin-remote"},
		{"dashboard", "127.0.0.1:0", "--admin-remote"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, sluiceBin, args...)
		cmd.Env = append(os.Environ(), "SLUICE_TOKEN=")
		cmd.Env = filterEnv(cmd.Env, "SLUICE_TOKEN")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Fatalf("%v: %v, want exit %d\n%s", args, err, exitUsage, errb.String())
		}
		if s := errb.String(); !strings.Contains(s, "--admin-remote needs a token") || !strings.Contains(s, "--token-file") {
			t.Errorf("%v: the error does not name the fix:\n%s", args, s)
		}
	}
	// With a token, stdio with --admin is accepted (the token guards the
	// dashboard); stdio alone still refuses one.
	tok := filepath.Join(w.root, "token")
	if err := os.WriteFile(tok, []byte("tok-9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sluiceProc(t, "", "serve", "--token-file", tok)
	want(t, r, exitUsage, "a token applies to --http or --admin only")
	r = sluiceProc(t, "", "serve", "--admin", "127.0.0.1:0", "--admin-remote", "--token-file", tok)
	if r.code == exitUsage {
		t.Fatalf("stdio --admin with a token: %s", r)
	}
}

func filterEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
