package main

import (
	"net/url"
	"strings"
	"testing"
)

// TestServerStderrIsScrubbedOfItsCredentials: a server that fails and
// repeats its command line on stderr does not put the credentials it was
// given in the CLI's error, the debug log or the dashboard; the rest of
// the line stays.
func TestServerStderrIsScrubbedOfItsCredentials(t *testing.T) {
	w := newWorld(t)
	const sid, bearer = "correcthorsebattery", "abc123secretvalue"
	// the fixture prints arguments it does not take, then exits
	w.writeUser("servers:\n" + fixture(t, "leak", "--", "--session-id", sid, "-H", "Authorization: Bearer "+bearer))
	t.Setenv("SLUICE_LOG_LEVEL", "debug")
	r := sluiceProc(t, "", "find", "--server", "leak", "--refresh")
	if !strings.Contains(r.stderr, "the server's stderr") || !strings.Contains(r.stderr, `"--session-id" "(hidden)"`) ||
		!strings.Contains(r.stderr, "[leak] ") {
		t.Fatalf("no scrubbed stderr tail and relayed line:\n%s", r)
	}
	outs := map[string]string{"find --refresh": r.stdout + r.stderr}
	addr, _, _, stderr, stop := startDashboardCmd(t)
	defer stop()
	d := newDash(t, addr)
	d.post("/admin/servers/leak/refresh", url.Values{"_csrf": {d.csrf}}, false) // fails: the tail is kept
	for _, p := range []string{"/admin/servers", "/admin/api/servers"} {
		_, body := d.get(p)
		outs["GET "+p] = body
	}
	if !strings.Contains(outs["GET /admin/api/servers"], `\"--session-id\" \"(hidden)\"`) {
		t.Errorf("the dashboard shows no scrubbed stderr tail:\n%s", outs["GET /admin/api/servers"])
	}
	outs["dashboard log"] = stderr.String()
	for where, out := range outs {
		for _, s := range []string{sid, bearer} {
			if strings.Contains(out, s) {
				t.Errorf("%s shows %s:\n%s", where, s, out)
			}
		}
	}
}
