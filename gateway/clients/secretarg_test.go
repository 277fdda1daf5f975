package clients

import "testing"

// TestSecretArgBothWays: the rule that hides an argument (and keeps import
// from copying it) catches a credential however plain after a flag named
// for one, and leaves words, paths, counts and references alone after a
// flag that only mentions one.
func TestSecretArgBothWays(t *testing.T) {
	for _, c := range []struct {
		args   []string
		secret bool
	}{
		// a flag named for the credential: its value is one
		{[]string{"--password", "swordfish"}, true},
		{[]string{"--password", "hunter2"}, true},
		{[]string{"--token", "abc12345xyz"}, true},
		{[]string{"--api-key", "letmeinplease"}, true},
		{[]string{"--db-password=correcthorse"}, true},
		{[]string{"--client-secret", "s3cr3t"}, true},
		{[]string{"--github-token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, true},
		// a credential's flag whose other words hold a "not secret" word
		// inside them (admin has min, minio has min, typesense has type)
		{[]string{"--admin-password", "swordfish"}, true},
		{[]string{"--minio-secret-key", "letmeinplease"}, true},
		{[]string{"--typesense-api-key", "xyz"}, true},
		{[]string{"--key", "swordfish"}, true},
		{[]string{"--pass=swordfish"}, true},
		{[]string{"--api-key-env", "MY_KEY"}, false},
		{[]string{"--secret-name", "prod-db"}, false},
		{[]string{"--password-min-length", "12"}, false},
		{[]string{"--sort-key", "name"}, false},
		// schema, mode and algorithm names joined by - or _ are settings;
		// a run of words without them is a passphrase
		{[]string{"--sort-key", "last_modified_time"}, false},
		{[]string{"--partition-key", "customer_region_name"}, false},
		{[]string{"--primary-key", "organization_id_field"}, false},
		{[]string{"--auth", "oauth-device-flow"}, false},
		{[]string{"--session", "interactive-login"}, false},
		{[]string{"--signature", "hmac-sha256-base64"}, false},
		{[]string{"--key", "correcthorsebattery"}, true},
		{[]string{"--auth", "opensesame.please"}, true},
		{[]string{"--session", "mysessionsecret"}, true},
		// a flag that mentions one: only a value that is not a word
		{[]string{"--auth-mode", "interactive"}, false},
		{[]string{"--secret-store", "keychain"}, false},
		{[]string{"--auth", "required"}, false},
		{[]string{"--session", "persistent"}, false},
		{[]string{"--auth-host", "auth.example.com"}, false},
		{[]string{"--auth-mode", "read-only"}, false},
		{[]string{"--session", "a1b2c3d4e5f6"}, true},
		{[]string{"--auth", "me:Hunter2pw"}, true},
		{[]string{"--sort-key", "created_at"}, false},
		// a flag whose last word is what a credential opens: a
		// passphrase of lowercase words is a credential
		{[]string{"--auth", "opensesame.please"}, true},
		{[]string{"--session", "mysessionsecret"}, true},
		{[]string{"--signature", "correcthorsebattery"}, true},
		{[]string{"--signing-key", "correct-horse-battery"}, true},
		{[]string{"--backup-key", "correcthorsebattery"}, true},
		{[]string{"--encryption-key", "opensesame"}, true},
		{[]string{"--webhook_key=correcthorse"}, true},
		// never credentials
		{[]string{"--token", "${env:GITHUB_TOKEN}"}, false},
		{[]string{"--token", "$GITHUB_TOKEN"}, false},
		{[]string{"--password", "/run/secrets/pw"}, false},
		{[]string{"--token", "-"}, false},
		{[]string{"--token-file", "tokfile123"}, false},
		{[]string{"--max-tokens", "4096"}, false},
		{[]string{"--verbose", "everything123"}, false},
		{[]string{"serve", "readonly"}, false},
		// a token's shape anywhere
		{[]string{"serve", "sk-live1234567890abcdef"}, true},
	} {
		i := len(c.args) - 1
		if got := SecretArg(c.args, i); got != c.secret {
			t.Errorf("SecretArg(%q, %d) = %v, want %v", c.args, i, got, c.secret)
		}
	}
}
