package main

import (
	"strings"
	"testing"
)

// TestAddWithoutDashesHidesSecretsInTheHint: the command echoed back to
// an add or update whose server command line lacks its -- hides an --env
// value that looks like a secret (by its name or shape) and a credential
// among the server's args, as the listings would; the rest is echoed.
func TestAddWithoutDashesHidesSecretsInTheHint(t *testing.T) {
	newWorld(t)
	secrets := []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hunter2pw", "swordfish1", "sk_live_51Habcdef0123456"}
	for _, args := range [][]string{
		{"add", "gh", "--env", "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "--env=DB_PASSWORD=hunter2pw", "--env", "MODE=plain", "npx", "pkg", "--token", "swordfish1", "--key=sk_live_51Habcdef0123456"},
		{"update", "gh", "-env", "API_KEY=swordfish1", "--url", "https://h.example/v1/sk_live_51Habcdef0123456/mcp", "npx"},
	} {
		r := sluiceProc(t, "", args...)
		want(t, r, exitUsage, "goes after --: sluice "+args[0]+" ", "(hidden)")
		if args[0] == "add" {
			want(t, r, exitUsage, "--env MODE=plain", "-- npx pkg --token '(hidden)' '--key=(hidden)'")
		}
		for _, s := range secrets {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Errorf("sluice %s echoes %q:\n%s", args[0], s, r)
			}
		}
	}
}
