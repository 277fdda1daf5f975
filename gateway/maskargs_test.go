package gateway

import (
	"slices"
	"strings"
	"testing"
)

// TestMaskArgsKeepsOrdinaryCommandLines: the command lines servers are
// declared with every day (packages, ports, paths, modes, versions,
// dates, ids, references, non-secret headers) are shown as written.
func TestMaskArgsKeepsOrdinaryCommandLines(t *testing.T) {
	for _, line := range []string{
		"npx -y @modelcontextprotocol/server-filesystem /home/me/notes /tmp",
		"npx -y @modelcontextprotocol/server-github@2025.4.8",
		"npx -y mcp-remote https://mcp.example.com/sse --header Authorization:${AUTH_HEADER}",
		"npx -y mcp-remote@0.1.29 https://mcp.example.com/mcp --header 'Authorization: Bearer ${API_TOKEN}'",
		"npx @playwright/mcp@latest --browser chrome --viewport-size 1280,720 --port 8931",
		"docker run -i --rm -p 8080:8080 -p 127.0.0.1:3000:3000 -p 9000-9010:9000-9010 -p 53:53/udp -p [::1]:80:80 -e GITHUB_PERSONAL_ACCESS_TOKEN ghcr.io/github/github-mcp-server:v0.5.0",
		"docker run -i --rm --name mysql -p 3306:3306 -e MYSQL_HOST=db mcp/mysql",
		"docker run -i --rm -p8080 -v /data:/data mcp/postgres postgresql://me@host.docker.internal:5432/db",
		"uvx mcp-server-git --repository /home/me/src/repo",
		"uvx mcp-server-fetch --user-agent Mozilla/5.0 --ignore-robots-txt",
		"uvx --from git+https://github.com/example/mcp-tools@v1.2.3 mcp-tools --since 2024-06-01T00:00:00Z",
		"python -m mcp_server_time --local-timezone America/New_York",
		"python3 -m mcp_server_sqlite --db-path /var/lib/app.sqlite --log-level debug",
		"node /home/me/servers/build/index.js --port 3000 --host 127.0.0.1",
		"mysql-mcp-server -p 3306 -u root --database app",
		"dynamo-mcp --table events --sort-key last_modified_time --partition-key customer_region_name",
		"srv --sort-key created_at --primary-key id --key-file /etc/key.pem --api-key-env OPENAI_API_KEY",
		"srv --workspace-id 123e4567-e89b-12d3-a456-426614174000 --rev 3f2a9c1b7d8e --version 1.2.3",
		"srv --auth-mode interactive --secret-store keychain --session persistent --auth required",
		"srv --session-id ${SESSION_ID} --token ${env:GITHUB_TOKEN} --password /run/secrets/db",
		"srv --header 'Content-Type: application/json' -H 'Accept: text/event-stream' -H 'X-Request-Id: 42'",
		"srv --label env:prod localhost:8080 key:value NODE_ENV=production LOG_LEVEL=debug",
		"ssh -p 2222 host.example.com",
		"redis-cli -h cache.internal -p 6379",
		"psql -h localhost -p 5432 -U postgres -d app",
		"curl -u me https://api.example.com/",
		"deno run --allow-net=api.example.com --allow-read=/data server.ts",
		"mysql -h 127.0.0.1 -P 3306 -u root -p${MYSQL_PASSWORD} app",
		"bash -c 'npx -y @modelcontextprotocol/server-filesystem /data && echo done' --login",
		"sh -c 'exec mysql -h db -P 3306 -u root -p${MYSQL_PASSWORD} app'",
		"cmd /c 'npx -y mcp-remote https://mcp.example.com/sse'",
		"curl -H 'Accept: application/json' -HX-Request-Id:42 -Hlocalhost https://api.example.com/",
		"mysql8 -h db -P 3306 -u root app",
		"npx mcp-remote https://x/sse --header 'Authorization: Bot ${DISCORD_TOKEN}' --header 'Authorization: ApiKey ${ES_KEY}'",
		"npx mcp-remote https://x/sse -H 'Cookie: session=${SID}' --header 'Authorization: Bearer ${A}${B}'",
		"notes-mcp --title 'Session: morning standup' --message 'Token: see the docs at https://x' 'Auth: required'",
		"mysql-proxy-mcp -t mysql -p readonly --name mysql -p 3306",
		"srv --db=postgresql://me@db:5432/app DATABASE_URL=postgres://db/app --url=https://mcp.example.com/mcp?profile=dev",
		"docker run -i -e MAX_TOKENS=4096 -e TOKEN_FILE=/run/secrets/token -e AUTH_MODE=interactive -e SESSION_TIMEOUT=30 img",
		"env AUTH_PROVIDER=github API_KEY_ENV=OPENAI_API_KEY PASSWORD_STORE=keychain AUTH_USER=admin srv",
		"env PGPASSWORD=${PGPASSWORD} GITHUB_TOKEN=$GITHUB_TOKEN srv",
	} {
		args := splitLine(line)
		if got := MaskArgs(args); !slices.Equal(got, args) {
			t.Errorf("MaskArgs hides part of an ordinary command line:\n got  %q\n want %q", got, args)
		}
	}
}

// TestMaskArgsHidesCredentials: a credential given on a command line is
// hidden however it is given: a header as one argument, a program's own
// password flag, a session id, NAME=VALUE, user:password; what says what
// the argument is (the header's name and scheme, the flag, the user)
// stays.
func TestMaskArgsHidesCredentials(t *testing.T) {
	const h = Hidden
	for _, c := range []struct{ line, want string }{
		{"srv -H 'Authorization: Bearer abc123secretvalue'", "srv -H 'Authorization: Bearer " + h + "'"},
		{"srv --header 'X-Api-Key: k3yvalue99'", "srv --header 'X-Api-Key: " + h + "'"},
		{"srv -H 'Cookie: sid=abcdef123; theme=dark'", "srv -H 'Cookie: " + h + "'"},
		{"srv '--header=Authorization: Bearer abc123'", "srv '--header=Authorization: Bearer " + h + "'"},
		{"npx -y mcp-remote https://mcp.example.com/sse --header Authorization:tok_abc123", "npx -y mcp-remote https://mcp.example.com/sse --header Authorization:" + h},
		{"srv 'Authorization: Basic dXNlcjpwYXNz'", "srv 'Authorization: Basic " + h + "'"},
		{"srv 'X-Auth-Token: hunter2pw'", "srv 'X-Auth-Token: " + h + "'"},
		{"mysql -u root -phunter2pw -h db", "mysql -u root -p" + h + " -h db"},
		{"mysql -u root -p hunter2pw", "mysql -u root -p " + h},
		{"mysql --user=root --password=hunter2pw", "mysql --user=root --password=" + h},
		{"/usr/bin/mysqladmin -phunter2pw status", "/usr/bin/mysqladmin -p" + h + " status"},
		{"mariadb-dump -p hunter2pw app", "mariadb-dump -p " + h + " app"},
		{"docker exec -i db mysql -uroot -phunter2pw app", "docker exec -i db mysql -uroot -p" + h + " app"},
		{"docker run -i --rm -p 3306:3306 mysql:8 mysql -p hunter2pw", "docker run -i --rm -p 3306:3306 mysql:8 mysql -p " + h},
		{"sshpass -p hunter2pw ssh -p 2222 host mcp-server", "sshpass -p " + h + " ssh -p 2222 host mcp-server"},
		{"sshpass -phunter2pw ssh host", "sshpass -p" + h + " ssh host"},
		{"sshpass -p hunter2pw ssh host docker run -i -p 8080:80 -p 9090 img", "sshpass -p " + h + " ssh host docker run -i -p 8080:80 -p 9090 img"},
		{"redis-cli -h cache -p 6379 -a hunter2pw", "redis-cli -h cache -p 6379 -a " + h},
		{"redis-cli --pass hunter2pw", "redis-cli --pass " + h},
		{"mongosh mongodb://db/app -u admin -p hunter2pw", "mongosh mongodb://db/app -u admin -p " + h},
		{"curl -u me:hunter2pw https://api.example.com/", "curl -u me:" + h + " https://api.example.com/"},
		{"openssl pkcs12 -passin pass:hunter2pw", "openssl pkcs12 -passin " + h},
		{"srv --session-id correcthorsebattery", "srv --session-id " + h},
		{"srv --session_id=correcthorsebattery", "srv --session_id=" + h},
		{"docker run -i -e GITHUB_TOKEN=hunter2pwsecret ghcr.io/github/github-mcp-server", "docker run -i -e GITHUB_TOKEN=" + h + " ghcr.io/github/github-mcp-server"},
		{"srv --password swordfish --token abc12345xyz", "srv --password " + h + " --token " + h},
		{"docker run -i -e PGPASSWORD=swordfish -e MODE=debug img", "docker run -i -e PGPASSWORD=" + h + " -e MODE=debug img"},
		{"env PGPASSWORD=swordfish psql -h db", "env PGPASSWORD=" + h + " psql -h db"},
		{"env PGPASSWORD=hunter2 psql -h db", "env PGPASSWORD=" + h + " psql -h db"},
		{"env PGPASSWORD=12345678 psql -h db", "env PGPASSWORD=" + h + " psql -h db"},
		{"env REDISCLI_AUTH=swordfish redis-cli", "env REDISCLI_AUTH=" + h + " redis-cli"},
		{"env SSHPASS=swordfish sshpass -e ssh host", "env SSHPASS=" + h + " sshpass -e ssh host"},
		{"docker run -e DB_PASS=swordfish img", "docker run -e DB_PASS=" + h + " img"},
		{"docker run -e MYPASSWORD=swordfish img", "docker run -e MYPASSWORD=" + h + " img"},
		{"docker run -e APITOKEN=swordfish img", "docker run -e APITOKEN=" + h + " img"},
		{"docker run -e GITHUBTOKEN=abcdefgh img", "docker run -e GITHUBTOKEN=" + h + " img"},
		{"srv --headers 'Authorization=Bearer abc123secret'", "srv --headers Authorization=" + h},
		{"curl -Ume:hunter2pw x", "curl -Ume:" + h + " x"},
		{"ldapsearch -whunter2pw -H ldap://db", "ldapsearch -w" + h + " -H ldap://db"},
		{"sqlcmd -S db -Phunter2pw", "sqlcmd -S db -P" + h},
		{"mosquitto_sub -h broker -Phunter2pw -t x", "mosquitto_sub -h broker -P" + h + " -t x"},
		{"smbclient //srv/share --user=me%hunter2pw", "smbclient //srv/share --user=me%" + h},
		{"smbclient //srv/share --user me%hunter2pw", "smbclient //srv/share --user me%" + h},
		{"mysql -p12345678 app", "mysql -p" + h + " app"},
		{"mysql.cmd -phunter2pw", "mysql.cmd -p" + h},
		{"mysql8 -phunter2pw", "mysql8 -p" + h},
		{`C:\mysql\bin\MySQL.exe -phunter2pw`, `C:\mysql\bin\MySQL.exe -p` + h},
		{"srv -HAuthorization:Bearer_abc123secret", "srv -HAuthorization:" + h},
		{"srv '-HAuthorization: Bearer abc123secret'", "srv '-HAuthorization: Bearer " + h + "'"},
		{"bash -c 'mysql -phunter2pw app'", "bash -c 'mysql -p" + h + "'"},
		{"sh -ec 'exec mysql -u root -p hunter2pw'", "sh -ec 'exec mysql -u root -p " + h + "'"},
		{`sh -c 'curl -H "Authorization: Bearer abc123secret" x'`, `sh -c 'curl -H "Authorization: Bearer ` + h + "'"},
		{`sh -c 'curl -H Authorization:\ Bearer\ abc123secret x'`, `sh -c 'curl -H Authorization:\ Bearer\ ` + h + "'"},
		{"/bin/bash -lc 'env PGPASSWORD=swordfish psql'", "/bin/bash -lc 'env PGPASSWORD=" + h + "'"},
		{"cmd /d /c 'mysql -phunter2pw app'", "cmd /d /c 'mysql -p" + h + "'"},
		{"pwsh -Command 'srv --token abc12345xyz'", "pwsh -Command 'srv --token " + h + "'"},
		{"srv -H 'Authorization: Bot abc123literal'", "srv -H 'Authorization: Bot " + h + "'"},
		{"srv 'Authorization: ApiKey k3yvalue99'", "srv 'Authorization: ApiKey " + h + "'"},
		{"srv 'Private-Token: k3yvalue99'", "srv 'Private-Token: " + h + "'"},
		{"kubectl exec -it pod -- mysql -phunter2pw", "kubectl exec -it pod -- mysql -p" + h},
		{"srv --db=postgresql://u:hunter2pw@h/db", "srv --db=postgresql://u:" + h + "@h/db"},
		{"srv DATABASE_URL=postgresql://u:hunter2pw@h/db", "srv DATABASE_URL=postgresql://u:" + h + "@h/db"},
		{"srv --url=https://api.example.com/mcp?api_key=k3yvalue99x&x=1", "srv --url=https://api.example.com/mcp?api_key=" + h + "&x=1"},
	} {
		args := splitLine(c.line)
		want := splitLine(c.want)
		if got := MaskArgs(args); !slices.Equal(got, want) {
			t.Errorf("MaskArgs(%q)\n got  %q\n want %q", args, got, want)
		}
	}
}

// splitLine splits a command line at spaces; a part in single quotes is
// one argument ('Authorization: Bearer x').
func splitLine(s string) []string {
	var out []string
	var b strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, b.String())
			}
			b.Reset()
			in = false
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}
