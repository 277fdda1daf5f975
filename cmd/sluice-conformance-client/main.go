// Command sluice-conformance-client drives sluice's own remote MCP client
// (gateway/remote under the gateway/mcp core) and OAuth client
// (gateway/oauth) through the official conformance suite's client
// scenarios. It takes the server URL as its only argument and the scenario
// in MCP_CONFORMANCE_SCENARIO (context JSON in MCP_CONFORMANCE_CONTEXT),
// the suite's convention. It is a test driver, not a product: the code it
// exercises is the code sluice runs.
//
// It imports gateway/mcp, gateway/remote and gateway/oauth directly, the
// only command that does: the scenarios test those packages, not the
// gateway's pipeline above them.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"sluice/gateway/mcp"
	"sluice/gateway/oauth"
	"sluice/gateway/remote"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sluice-conformance-client SERVER_URL (scenario in MCP_CONFORMANCE_SCENARIO)")
		os.Exit(2)
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var cctx map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cctx); err != nil {
			fmt.Fprintf(os.Stderr, "MCP_CONFORMANCE_CONTEXT is not JSON: %v\n", err)
			os.Exit(2)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run(ctx, scenario, os.Args[1], cctx); err != nil {
		fmt.Fprintf(os.Stderr, "scenario %s: %v\n", scenario, err)
		os.Exit(1)
	}
}

var logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func run(ctx context.Context, scenario, url string, cctx map[string]any) error {
	var auth remote.Authorizer
	if strings.HasPrefix(scenario, "auth/") {
		a, err := newAuth(url, scenario, cctx)
		if err != nil {
			return err
		}
		auth = a
	}
	var opts mcp.Options
	var mrtr *mrtrScenario
	switch scenario {
	case "elicitation-sep1034-client-defaults":
		opts.Capabilities = json.RawMessage(`{"elicitation":{}}`)
		opts.OnRequest = acceptAsIs
	case "sep-2322-client-request-state":
		mrtr = &mrtrScenario{}
		opts.Capabilities = json.RawMessage(`{"elicitation":{}}`)
		opts.OnRequest = mrtr.answer
	}
	c, err := connect(ctx, url, auth, &opts)
	if err != nil {
		return err
	}
	defer c.Close()
	switch scenario {
	case "sep-2322-client-request-state":
		mrtr.c = c
		return mrtr.run(ctx)
	case "request-metadata":
		return nil
	case "tools_call":
		return callNamed(ctx, c, "add_numbers", `{"a":5,"b":3}`)
	case "sse-retry":
		return callNamed(ctx, c, "test_reconnection", `{}`)
	case "elicitation-sep1034-client-defaults":
		return callNamed(ctx, c, "test_client_elicitation_defaults", `{}`)
	case "json-schema-2020-12-preservation":
		tl, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tl.Tools {
			if t.Name == "json_schema_2020_12_tool" {
				args := append(append([]byte(`{"schema":`), t.InputSchema...), '}')
				_, err := c.CallTool(ctx, "json_schema_echo", args, nil)
				return err
			}
		}
		return errors.New("tool json_schema_2020_12_tool not found")
	case "http-standard-headers":
		tl, err := c.ListTools(ctx)
		if err == nil && len(tl.Tools) > 0 {
			c.CallTool(ctx, tl.Tools[0].Name, []byte(`{}`), nil)
		}
		if items, _, err := c.List(ctx, "resources/list", "resources"); err == nil && len(items) > 0 {
			var r struct{ URI string }
			json.Unmarshal(items[0], &r)
			p, _ := json.Marshal(map[string]string{"uri": r.URI})
			c.Request(ctx, "resources/read", p, nil)
		}
		if items, _, err := c.List(ctx, "prompts/list", "prompts"); err == nil && len(items) > 0 {
			var p struct{ Name string }
			json.Unmarshal(items[0], &p)
			b, _ := json.Marshal(map[string]any{"name": p.Name, "arguments": map[string]string{}})
			c.Request(ctx, "prompts/get", b, nil)
		}
		return nil
	case "http-custom-headers":
		if _, err := c.ListTools(ctx); err != nil {
			return err
		}
		calls, _ := cctx["toolCalls"].([]any)
		for _, x := range calls {
			m, _ := x.(map[string]any)
			args, _ := json.Marshal(m["arguments"])
			if string(args) == "null" {
				args = []byte(`{}`)
			}
			c.CallTool(ctx, str(m, "name"), args, nil)
		}
		return nil
	case "http-invalid-tool-headers":
		tl, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tl.Tools {
			c.CallTool(ctx, t.Name, []byte(`{"region":"us-west1"}`), nil)
		}
		return nil
	}
	tl, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	if strings.HasPrefix(scenario, "auth/") {
		for _, t := range tl.Tools {
			if t.Name == "test-tool" {
				_, err := c.CallTool(ctx, "test-tool", []byte(`{}`), nil)
				return err
			}
		}
	}
	return nil
}

func connect(ctx context.Context, url string, auth remote.Authorizer, opts *mcp.Options) (*mcp.Client, error) {
	conn, err := remote.Dial(ctx, &remote.Options{Server: "conformance", URL: url, AllowPrivate: true, Authorizer: auth, Logger: logger})
	if err != nil {
		return nil, err
	}
	o := *opts
	o.Server, o.ClientName, o.ClientVersion, o.Logger = "conformance", "sluice-conformance-client", "dev", logger
	o.DiscoverTimeout = 10 * time.Second
	c := mcp.New(conn, &o)
	if err := c.Handshake(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func callNamed(ctx context.Context, c *mcp.Client, name, args string) error {
	tl, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tl.Tools {
		if t.Name == name {
			_, err := c.CallTool(ctx, name, []byte(args), nil)
			return err
		}
	}
	return fmt.Errorf("tool %q not found", name)
}

// acceptAsIs accepts an elicitation without filling in any field, as a
// user who submits a form as shown: the client core completes the answer
// with the schema's defaults (SEP-1034).
func acceptAsIs(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method != "elicitation/create" {
		return nil, mcp.ErrMethodNotFound
	}
	return json.RawMessage(`{"action":"accept"}`), nil
}

// mrtrScenario calls the multi-round-trip tools (SEP-2322). While the
// first one waits for its input, an unrelated tool is called, so that
// request runs between the rounds of another.
type mrtrScenario struct {
	c         *mcp.Client
	unrelated sync.Once
	err       error
}

func (s *mrtrScenario) answer(ctx context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method != "elicitation/create" {
		return nil, mcp.ErrMethodNotFound
	}
	s.unrelated.Do(func() {
		_, s.err = s.c.CallTool(ctx, "test_mrtr_unrelated", []byte(`{}`), nil)
	})
	return json.RawMessage(`{"action":"accept","content":{"confirmed":true}}`), nil
}

func (s *mrtrScenario) run(ctx context.Context) error {
	for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"} {
		if _, err := s.c.CallTool(ctx, name, []byte(`{}`), nil); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if s.err != nil {
		return fmt.Errorf("test_mrtr_unrelated: %w", s.err)
	}
	return nil
}

// follow plays the browser: it requests the authorization URL and follows
// its redirect to the loopback callback.
func follow(authURL string) error {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 20 * time.Second}
	resp, err := noRedirect.Get(authURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return fmt.Errorf("the authorization endpoint answered %d without a redirect", resp.StatusCode)
	}
	go func() { // the callback answers once Login has read the redirect
		if r, err := noRedirect.Get(loc); err == nil {
			var b bytes.Buffer
			b.ReadFrom(r.Body)
			r.Body.Close()
		}
	}()
	return nil
}

func newAuth(url, scenario string, cctx map[string]any) (remote.Authorizer, error) {
	dir, err := os.MkdirTemp("", "sluice-conformance-oauth-")
	if err != nil {
		return nil, err
	}
	cfg := oauth.Config{Server: "conformance", URL: url, StateDir: dir, AllowPrivate: true, ClientName: "sluice-conformance-client",
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json", Logger: logger,
		ClientID: str(cctx, "client_id"), ClientSecret: str(cctx, "client_secret"),
		// The product's in-place authorization, with a browser stand-in
		// (the suite's authorization server approves at once).
		Interactive: &oauth.LoginOptions{Open: follow, Timeout: 20 * time.Second}, InteractiveFirst: true}
	switch scenario {
	case "auth/client-credentials-basic":
		cfg.Grant, cfg.TokenAuthMethod = oauth.GrantClientCredentials, "client_secret_basic"
	case "auth/client-credentials-jwt":
		cfg.Grant, cfg.TokenAuthMethod, cfg.PrivateKey = oauth.GrantClientCredentials, "private_key_jwt", str(cctx, "private_key_pem")
	}
	return oauth.New(cfg)
}
