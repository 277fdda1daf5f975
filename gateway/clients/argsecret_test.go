package clients

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConvertNeverCopiesSecretsInArgsOrURL: sluice expands references only
// in env and headers, so a credential a client passes in argv or in the
// url's query cannot become ${env:NAME}; copying it would put it in the
// declaration (a project file is committed and shared). Such an entry is
// skipped with a note that names where the secret is and what to do,
// never the value, and keeps neither the args nor the url; look-alikes that are not secrets are imported.
func TestConvertNeverCopiesSecretsInArgsOrURL(t *testing.T) {
	const gh, sk = "ghp_AbCdEf0123456789AbCdEf0123456789abcd", "sk-live-0123456789abcdefABCDEF"
	file := `{"mcpServers":{
 "flag":{"command":"npx","args":["-y","@modelcontextprotocol/server-github","--token","` + gh + `"]},
 "flag-eq":{"command":"srv","args":["--api-key=` + sk + `"]},
 "shaped":{"command":"srv","args":["serve","` + gh + `"]},
 "query":{"url":"https://server.example.com/mcp?profile=dev&api_key=` + sk + `"},
 "query-shaped":{"url":"https://server.example.com/mcp?k=` + gh + `"},
 "path":{"url":"https://server.example.com/` + gh + `/mcp"},
 "plain":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","--token-file","/home/me/.tok","--max-tokens","100"]},
 "ref":{"command":"srv","args":["--token","${GITHUB_TOKEN}"]},
 "plain-url":{"url":"https://server.example.com/mcp?profile=dev&session=1"},
 "env-arg":{"command":"env","args":["PGPASSWORD=swordfish","psql","-h","db"]},
 "docker-env":{"command":"docker","args":["run","-i","-e","MYPASSWORD=swordfish","img"]},
 "shell":{"command":"bash","args":["-c","mysql -phunter2pw app"]},
 "url-eq":{"command":"srv","args":["--db=https://server.example.com/mcp?api_key=` + sk + `"]},
 "plain-env":{"command":"docker","args":["run","-i","-e","MAX_TOKENS=4096","-e","AUTH_MODE=interactive","-e","TOKEN_FILE=/run/t","img"]},
 "plain-shell":{"command":"bash","args":["-c","npx -y @modelcontextprotocol/server-filesystem /data"]},
 "plain-url-eq":{"command":"srv","args":["--url=https://server.example.com/mcp?profile=dev"]},
 "plain-title":{"command":"notes-mcp","args":["--title","Session: morning standup"]},
 "plain-scheme":{"command":"npx","args":["mcp-remote","https://x/sse","--header","Authorization: Bot ${DISCORD_TOKEN}"]},
 "plain-dialect":{"command":"mysql-proxy-mcp","args":["-t","mysql","-p","readonly"]}
}}`
	c, _ := Lookup("cursor")
	src, err := Read(c, "/p/.cursor/mcp.json", []byte(file), "")
	if err != nil {
		t.Fatal(err)
	}
	decls := Convert(src, ConvertOptions{})
	got := map[string]Decl{}
	for _, d := range decls {
		got[d.From] = d
	}
	for _, name := range []string{"flag", "flag-eq", "shaped", "query", "query-shaped", "path", "env-arg", "docker-env", "shell", "url-eq"} {
		d, ok := got[name]
		if !ok {
			t.Fatalf("%s: no declaration", name)
		}
		if d.Skip == "" || !strings.Contains(d.Skip, "secret") {
			t.Errorf("%s: imported with a secret in it: args %q url %q (skip %q)", name, d.Args, d.URL, d.Skip)
		}
	}
	for _, name := range []string{"plain", "ref", "plain-url", "plain-env", "plain-shell", "plain-url-eq", "plain-title", "plain-scheme", "plain-dialect"} {
		if d := got[name]; d.Skip != "" {
			t.Errorf("%s: skipped although it holds no secret: %s", name, d.Skip)
		}
	}
	b, _ := json.Marshal(decls)
	text := string(b)
	if strings.Contains(text, gh) || strings.Contains(text, sk) {
		t.Fatalf("a secret reached a note or a skip reason:\n%s", text)
	}
}
