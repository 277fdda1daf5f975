package gateway

import "testing"

func TestMaskValueHidesSecretsAndKeepsReferences(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"GITHUB_TOKEN", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", Hidden},
		{"MODE", "debug", "debug"},
		{"SSHPASS", "swordfish", Hidden},
		{"DB_PASS", "swordfish", Hidden},
		{"PASS", "swordfish", Hidden},
		{"COMPASS", "north", "north"},
		{"BYPASS", "yes", "yes"},
		{"GPG_PASSPHRASE", "correct horse battery", Hidden},
		{"LDAP_BIND_PW", "swordfish", Hidden},
		{"VPN_PASSCODE", "swordfish", Hidden},
		{"PWDEBUG", "console", "console"},
		{"PW_TEST_REPORTER", "list", "list"},
		{"PASSTHROUGH", "stdio", "stdio"},
		{"ANY", "sk-live1234567890abcdef", Hidden},
		{"GITHUB_TOKEN", "${env:GITHUB_TOKEN}", "${env:GITHUB_TOKEN}"},
		{"Authorization", "Bearer ${env:TOKEN}", "Bearer ${env:TOKEN}"},
		{"Authorization", "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789 ${env:X}", "Bearer (hidden) ${env:X}"},
		{"DATABASE_URL", "postgres://me:pw@db/x", "postgres://me:(hidden)@db/x"},
		{"DATABASE_URL", "postgres://me@db/x", "postgres://me@db/x"},
	} {
		if got := MaskValue(c.name, c.in); got != c.want {
			t.Errorf("MaskValue(%q, %q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
	args := []string{"-y", "pkg@1", "--token", "abc12345xyz", "--key=v1secret99", "API_KEY=xyz", "--max-tokens", "4096", "--verbose", "plain",
		"https://h.example/x?api_key=abcdef123456&page=2", "https://me:pw@h.example/"}
	want := []string{"-y", "pkg@1", "--token", Hidden, "--key=" + Hidden, "API_KEY=" + Hidden, "--max-tokens", "4096", "--verbose", "plain",
		"https://h.example/x?api_key=" + Hidden + "&page=2", "https://me:" + Hidden + "@h.example/"}
	got := MaskArgs(args)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("MaskArgs(%q) = %q, want %q", args, got, want)
		}
	}
	if args[3] != "abc12345xyz" {
		t.Fatal("MaskArgs changed its input")
	}
}

func TestMaskServerURLHidesEveryQueryValue(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://h.example/mcp", "https://h.example/mcp"},
		{"https://h.example/mcp?key=abc123", "https://h.example/mcp?key=" + Hidden},
		{"https://h.example/mcp?page=2&api_key=abcdef123456", "https://h.example/mcp?page=" + Hidden + "&api_key=" + Hidden},
		{"https://h.example/mcp?key=${env:KEY}&flag", "https://h.example/mcp?key=${env:KEY}&flag"},
		{"https://h.example/mcp?key=x${env:KEY}", "https://h.example/mcp?key=" + Hidden},
		{"https://me:pw@h.example/mcp?k=v", "https://me:" + Hidden + "@h.example/mcp?k=" + Hidden},
		{"https://h.example/mcp?sk_live_51Habcdef0123&debug", "https://h.example/mcp?" + Hidden + "&debug"},
	} {
		if got := (ServerView{URL: c.in, Scope: "user"}).Masked().URL; got != c.want {
			t.Errorf("Masked URL of %q = %q, want %q", c.in, got, c.want)
		}
	}
	if got := (ServerView{URL: "https://h.example/mcp?key=abc123", Scope: "project"}).Masked().URL; got != "https://h.example/mcp?key=abc123" {
		t.Errorf("a project server's url is masked: %q", got)
	}
}
