package gateway

import "testing"

func TestMaskValueHidesSecretsAndKeepsReferences(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"GITHUB_TOKEN", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", Hidden},
		{"MODE", "debug", "debug"},
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
