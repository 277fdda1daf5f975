package gateway

import (
	"fmt"
	"slices"
	"testing"

	"sluice/gateway/clitool"
	"sluice/gateway/config"
)

// TestScrubberHidesWhatTheServerWasGiven: the env values (as expanded)
// and the args parts a listing hides are replaced in a stderr line; what
// is not a credential stays.
func TestScrubberHidesWhatTheServerWasGiven(t *testing.T) {
	d := config.Server{Command: "mysql", Args: []string{"-u", "root", "-phunter2pw", "--session-id", "correcthorsebattery", "postgres://me:dbpw5678@db/x"}}
	env := map[string]string{
		"GITHUB_TOKEN": "plainvalue99", // from ${env:GITHUB_TOKEN}: judged by its name
		"AUTH_HEADER":  "Bearer tok_abc12345",
		"MODE":         "debug",
	}
	scrub := scrubber(declSecrets(d, env))
	for in, want := range map[string]string{
		"token plainvalue99 refused":                     "token (hidden) refused",
		"sent Bearer tok_abc12345; got 401":              "sent Bearer (hidden); got 401",
		"header tok_abc12345 refused":                    "header (hidden) refused",
		"mysql -u root -phunter2pw: access denied":       "mysql -u root -p(hidden): access denied",
		"session correcthorsebattery expired":            "session (hidden) expired",
		"connect postgres://me:dbpw5678@db/x: refused":   "connect postgres://me:(hidden)@db/x: refused",
		"mode debug, user root, nothing secret in here.": "mode debug, user root, nothing secret in here.",
	} {
		if got := string(scrub.Scrub([]byte(in))); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
	if scrubber(declSecrets(config.Server{Command: "srv", Args: []string{"--port", "80"}}, map[string]string{"MODE": "debug"})) != nil {
		t.Error("a server given no credential gets a scrubber")
	}
}

// TestScrubberHoldsABeginningSecret: the end of a piece of a long line
// that begins one of the secrets (the longest such end) is what the
// reader holds back for the next piece; an end that begins none, or a
// whole secret (already replaced), is not held.
func TestScrubberHoldsABeginningSecret(t *testing.T) {
	scrub := scrubber([]string{"hunter2secretpw", "dbpw5678"})
	for in, want := range map[string]int{
		"xxxxhunter2sec":      len("hunter2sec"),
		"xxxxdbpw567":         len("dbpw567"),
		"xxxxd":               1,
		"xxxxh":               1,
		"xxxxhunter2secretpw": 0, // whole: Scrub has replaced it
		"xxxxhunterx":         0,
		"":                    0,
	} {
		if got := scrub.Partial([]byte(in)); got != want {
			t.Errorf("Partial(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestScrubberHidesTheFormsAServerPrints: a credential is hidden as a
// server may print it, not only as it was given: a url's password still
// percent-encoded (as given, in args or env) and in a --flag=url, one
// escaped in a JSON string, and the Basic header a client builds of a
// user:password (and what a Basic header given decodes to).
func TestScrubberHidesTheFormsAServerPrints(t *testing.T) {
	d := config.Server{Command: "curl", Args: []string{
		"postgres://me:p%40ss5678@db/x", "--db=postgres://me:dbpw5678@db/y",
		"--password", `quo"te\pw99`, "-u", "me:hunter2pw",
	}}
	env := map[string]string{
		"DATABASE_URL": "postgres://me:s3cr%2Ft99@db/x",
		"AUTH_HEADER":  "Basic Ym9iOnNlc2FtZTEyMzQ=", // bob:sesame1234
	}
	scrub := scrubber(declSecrets(d, env))
	for in, want := range map[string]string{
		"connect postgres://me:p%40ss5678@db/x":   "connect postgres://me:(hidden)@db/x",
		"connect postgres://me:s3cr%2Ft99@db/x":   "connect postgres://me:(hidden)@db/x",
		"connect postgres://me:dbpw5678@db/y":     "connect postgres://me:(hidden)@db/y",
		`{"password":"quo\"te\\pw99"}`:            `{"password":"(hidden)"}`,
		"> Authorization: Basic bWU6aHVudGVyMnB3": "> Authorization: Basic (hidden)",
		"> Authorization: Basic bWU6ZGJwdzU2Nzg=": "> Authorization: Basic (hidden)",
		"login bob:sesame1234 refused":            "login (hidden) refused",
	} {
		if got := string(scrub.Scrub([]byte(in))); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestScrubberHidesACLIToolsBracedLiteral: a cli tool's literal argv
// element is scrubbed as the program gets it, "{{x}}" read as "{x}".
func TestScrubberHidesACLIToolsBracedLiteral(t *testing.T) {
	d := config.Server{CLI: &config.CLI{Tools: []config.CLITool{{Name: "get", Spec: clitool.Spec{
		Argv: []clitool.Elem{{Text: "srv"}, {Text: "--password"}, {Text: "hunter2pw{{x}}"}, {Text: "--q={q}"}},
	}}}}}
	scrub := scrubber(declSecrets(d, nil))
	if scrub == nil {
		t.Fatal("no scrubber for a tool given a password")
	}
	if got := string(scrub.Scrub([]byte("login hunter2pw{x} refused"))); got != "login (hidden) refused" {
		t.Errorf("scrubbed %q", got)
	}
}

// TestScrubberLeavesSettingsNamedLikeCredentials: an env value judged a
// credential only by its name is scrubbed only when it could be one
// (namedSecret); a setting such as AUTH_MODE=oauth is an ordinary word
// of the server's stderr, hidden before even inside other words
// ("rediscover").
func TestScrubberLeavesSettingsNamedLikeCredentials(t *testing.T) {
	env := map[string]string{
		"AUTH_MODE": "oauth", "SESSION_STORE": "redis", "TOKEN_URL": "https://auth.example.com/token", "AUTH_ENABLED": "true",
		"API_TOKEN": "plainvalue99",
	}
	scrub := scrubber(declSecrets(config.Server{Command: "srv"}, env))
	for in, want := range map[string]string{
		"connecting to redis at localhost:6379 (rediscover on)":       "connecting to redis at localhost:6379 (rediscover on)",
		"oauth flow started; fetching https://auth.example.com/token": "oauth flow started; fetching https://auth.example.com/token",
		"feature enabled=true":       "feature enabled=true",
		"token plainvalue99 refused": "token (hidden) refused",
	} {
		if got := string(scrub.Scrub([]byte(in))); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStdoutSecretsLeaveSettingsNamedLikeCredentials: a setting under a
// name that reads as a credential's (AUTH_MODE: readonly) is no secret
// of a server's messages, where hiding it renamed tools, schema keys
// and annotations; a value with a credential's shape, one given by a
// reference and a url's password still are. (stderr keeps hiding them
// all.)
func TestStdoutSecretsLeaveSettingsNamedLikeCredentials(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"list_databases","description":"Lists every Database; password login, keychain items, sessionid cookie, repo read:org scope","inputSchema":{"type":"object","properties":{"password":{"type":"string"}}},"annotations":{"readOnlyHint":true}}]}}`
	d := config.Server{ID: "s", Command: "srv", Env: map[string]string{
		"SESSION_DRIVER": "database", "AUTH_MODE": "readonly", "AUTH_METHOD": "password", "TOKEN_STORE": "keychain",
		"SESSION_COOKIE_NAME": "sessionid", "AUTH_SCOPES": "repo read:org",
		"DB_PASSWORD": "${env:PW}", "API_TOKEN": "tok-Value-2026-abcdef", "DATABASE_URL": "postgres://me:pgpass1234@db/x",
	}}
	env := map[string]string{}
	for k, v := range d.Env {
		env[k] = v
	}
	env["DB_PASSWORD"] = "correcthorsebattery"
	ss := newScrubber(stdoutSecrets(d, env))
	if got := string(ss.ScrubMessage([]byte(msg))); got != msg {
		t.Errorf("a setting was hidden from a message:\n  %s\nwas %s", got, msg)
	}
	in := `{"id":1,"result":{"text":"pw correcthorsebattery, tok-Value-2026-abcdef, pgpass1234"}}`
	if got := string(ss.ScrubMessage([]byte(in))); got != `{"id":1,"result":{"text":"pw (hidden), (hidden), (hidden)"}}` {
		t.Errorf("ScrubMessage(%s) = %s", in, got)
	}
	// a credential's own name keeps any value; a reference alone does not
	d.Env = map[string]string{"DB_PASSWORD": "swordfishswordfish", "GPG_PASSPHRASE": "correct-horse-battery", "SSHPASS": "hunterhunter",
		"CLIENT_SECRET": "NotSoSecretButSecret", "API_TOKEN": "abcdefghijklmnopqrstuvwx", "AUTH_MODE": "${env:AUTH_MODE}"}
	named := map[string]string{"AUTH_MODE": "readonly"}
	for k, v := range d.Env {
		if k != "AUTH_MODE" {
			named[k] = v
		}
	}
	ss = newScrubber(stdoutSecrets(d, named))
	if got := string(ss.ScrubMessage([]byte(msg))); got != msg {
		t.Errorf("a referenced setting was hidden from a message:\n  %s", got)
	}
	in = `{"id":1,"result":{"text":"swordfishswordfish correct-horse-battery hunterhunter NotSoSecretButSecret abcdefghijklmnopqrstuvwx"}}`
	if got := string(ss.ScrubMessage([]byte(in))); got != `{"id":1,"result":{"text":"(hidden) (hidden) (hidden) (hidden) (hidden)"}}` {
		t.Errorf("ScrubMessage(%s) = %s", in, got)
	}
	if got := string(scrubber(declSecrets(d, env)).Scrub([]byte("mode readonly"))); got != "mode (hidden)" {
		t.Errorf("stderr: %q", got)
	}
}

// TestLiveScrubberHidesStaticAndRecentSecrets: a remote OAuth server's
// static secrets (a header's) are hidden from its first message on, also
// while the authorizer is busy and has never answered; a token replaced
// by a refresh stays hidden (an answer to a request sent with it may
// come later).
func TestLiveScrubberHidesStaticAndRecentSecrets(t *testing.T) {
	busy := true
	tokens := []string{"", "oldAccessToken1234", "refreshTok5678"}
	l := &liveScrubber{static: []string{"staticHeaderSecret99"}, live: func() ([]string, bool) {
		if busy {
			return nil, false
		}
		return tokens, true
	}}
	in := `{"id":1,"result":{"t":"you sent staticHeaderSecret99"}}`
	if got := string(l.ScrubMessage([]byte(in))); got != `{"id":1,"result":{"t":"you sent (hidden)"}}` {
		t.Errorf("while busy: %s", got)
	}
	busy = false
	l.ScrubMessage([]byte(`{"id":2,"result":{}}`))
	tokens = []string{"", "newAccessToken4321", "refreshTok9999"}
	in = `{"id":3,"result":{"t":"oldAccessToken1234 newAccessToken4321 staticHeaderSecret99"}}`
	if got := string(l.ScrubMessage([]byte(in))); got != `{"id":3,"result":{"t":"(hidden) (hidden) (hidden)"}}` {
		t.Errorf("after a refresh: %s", got)
	}
}

// TestURLQueryCredentialsAreSecrets: a stdio server's url in an argument
// or env value gives its query credential and token-shaped path segment
// to the scrub as a remote server's url does; a query setting under a
// credential's name (?auth=true) is no secret of any server.
func TestURLQueryCredentialsAreSecrets(t *testing.T) {
	d := config.Server{Command: "srv", Args: []string{"--url=https://x.example/v1/?api_key=qwertyuiop123"}}
	got := declSecrets(d, map[string]string{"ENDPOINT": "https://x.example/sk_live_abcdefghijklmnop12345678/?access_token=asdfghjkl9876"})
	for _, want := range []string{"qwertyuiop123", "asdfghjkl9876", "sk_live_abcdefghijklmnop12345678"} {
		if !slices.Contains(got, want) {
			t.Errorf("declSecrets = %q, missing %q", got, want)
		}
	}
	if got := remoteSecrets(config.Server{URL: "https://x.example/mcp?auth=true&auth_mode=text&token_type=bearer"}, nil); len(got) != 0 {
		t.Errorf("remoteSecrets = %q, want none", got)
	}
}

// TestLiveScrubberKeepsCurrentSecretsThroughRefreshes: however many
// refreshes retire tokens, a secret still in use (the client secret) is
// hidden; a retired token is for a while.
func TestLiveScrubberKeepsCurrentSecretsThroughRefreshes(t *testing.T) {
	n := 0
	l := &liveScrubber{live: func() ([]string, bool) {
		return []string{"clientSecret-0042", fmt.Sprintf("accessToken-%04d", n), fmt.Sprintf("refreshToken-%04d", n)}, true
	}}
	for n = 0; n < 20; n++ {
		in := fmt.Sprintf(`{"id":1,"result":{"t":"clientSecret-0042 accessToken-%04d accessToken-%04d"}}`, n, max(n-1, 0))
		if got := string(l.ScrubMessage([]byte(in))); got != `{"id":1,"result":{"t":"(hidden) (hidden) (hidden)"}}` {
			t.Fatalf("after %d refreshes: %s", n, got)
		}
	}
}

// TestRemoteScrubLeavesHeaderSettings: a remote server's header named
// like a credential's domain but holding a setting is not hidden from
// its messages; a credential header is.
func TestRemoteScrubLeavesHeaderSettings(t *testing.T) {
	scrub, _ := remoteScrub(config.Server{URL: "https://mcp.example.com/mcp"}, map[string]string{
		"X-Auth-Mode": "readonly", "X-Session-Store": "database", "Authorization": "Bearer lettersonlytokenvalue", "X-Api-Key": "plainapikeyvalue"}, nil)
	in := `{"id":1,"result":{"tools":[{"name":"list_databases","annotations":{"readOnlyHint":true}}],"t":"lettersonlytokenvalue plainapikeyvalue"}}`
	want := `{"id":1,"result":{"tools":[{"name":"list_databases","annotations":{"readOnlyHint":true}}],"t":"(hidden) (hidden)"}}`
	if got := string(scrub([]byte(in))); got != want {
		t.Errorf("scrub = %s\nwant %s", got, want)
	}
}
