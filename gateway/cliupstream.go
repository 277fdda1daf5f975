package gateway

// This file is the in-process upstream of a cli declaration: its tools
// are compiled by clitool and served by a clitool.Conn, which is an
// mcp.Transport, so the gateway talks to it through the same mcp.Client
// as to a server process.
// Every path a tool takes (catalog, find, describe, call, admission and
// action classes, code mode, filters, flat and gateway mode) is therefore
// the same for a CLI tool as for any other.

import (
	"context"
	"encoding/json"
	"time"

	"sluice/gateway/clitool"
	"sluice/gateway/config"
	"sluice/gateway/mcp"
)

// cliTools compiles a cli declaration's tools with how they run filled in:
// the server's cwd and env, the operator's allow-list, the gateway's
// teardown graces, and a timeout (the tool's, else the server's, else the
// gateway's default call timeout).
func (g *Gateway) cliTools(d config.Server, env map[string]string) ([]*clitool.Tool, error) {
	tools := make([]*clitool.Tool, 0, len(d.CLI.Tools))
	for _, t := range d.CLI.Tools {
		s := t.Spec
		s.Server = d.ID
		s.Program = t.Program // resolved at load on the gateway's PATH, bound by trust
		s.Dir, s.Root, s.Env, s.PassEnv = d.Dir, d.Root, env, d.PassEnv
		s.AllowCommands = g.allow
		s.KillGrace, s.StdinGrace, s.KillBound = g.opts.killGrace, g.opts.stdinGrace, g.opts.killBound
		s.Timeout = cliTimeout(d, t)
		s.Scrub = scrubber(declSecrets(d, env))
		s.ShowArgs = MaskArgs // the model reads a description made of the template
		if g.opts.ServerStderr != nil {
			s.Stderr = &prefixWriter{w: g.opts.ServerStderr, prefix: "[" + d.ID + "__" + t.Name + "] "}
		}
		tool, err := clitool.Compile(s)
		if err != nil {
			return nil, &Error{Kind: KindGateway, Server: d.ID, Message: err.Error(), Err: err}
		}
		tools = append(tools, tool)
	}
	return tools, nil
}

// cliTimeout is a CLI tool's own deadline.
func cliTimeout(d config.Server, t config.CLITool) time.Duration {
	switch {
	case t.TimeoutMs > 0:
		return time.Duration(t.TimeoutMs) * time.Millisecond
	case d.TimeoutMs > 0:
		return time.Duration(d.TimeoutMs) * time.Millisecond
	}
	return DefaultCallTimeout
}

// cliCallTimeout is how long the gateway waits for a call of tool on a
// cli server: a little over the tool's own deadline, so that the tool's
// timeout (which names the tool and tears its process group down) is the
// one that fires.
func cliCallTimeout(d config.Server, tool string) (time.Duration, bool) {
	if d.CLI == nil {
		return 0, false
	}
	t, ok := d.CLI.Tool(tool)
	if !ok {
		return 0, false
	}
	return cliTimeout(d, t) + cliTimeoutMargin, true
}

// cliTimeoutMargin covers the teardown of a timed-out tool's group.
const cliTimeoutMargin = 10 * time.Second

// startCLI is mcp.Start for a cli declaration: nothing is spawned until a
// tool is called.
func (g *Gateway) startCLI(ctx context.Context, d config.Server, env map[string]string, opts *mcp.Options) (*mcp.Client, error) {
	tools, err := g.cliTools(d, env)
	if err != nil {
		return nil, err
	}
	// The Conn is an mcp.Transport: the client core talks to it as to a
	// server process, with no bytes framed and no process until a call.
	c := mcp.New(clitool.NewConn(d.ID, g.opts.ClientVersion, tools), opts)
	if err := c.Handshake(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// cliListing is a cli server's tools as its declaration defines them:
// known without running anything, so find and describe answer at once.
func cliListing(d config.Server) listing {
	l := listing{prov: ProvDeclared}
	for _, t := range d.CLI.Tools {
		spec := t.Spec
		spec.ShowArgs = MaskArgs // as the running server describes it
		tool, err := clitool.Compile(spec)
		if err != nil {
			continue // config compiled it already; cannot happen
		}
		if ti, ok := fromRaw(tool.Definition()); ok {
			l.tools = append(l.tools, ti)
		}
	}
	return l
}

// CLIToolView is one tool of a cli server as a person reviews it: what it
// tells the model and the argv it runs.
type CLIToolView struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Argv        string `json:"argv"` // the template, optional groups in [brackets]
	Output      string `json:"output"`
}

func cliViews(d config.Server) []CLIToolView {
	if d.CLI == nil {
		return nil
	}
	out := make([]CLIToolView, 0, len(d.CLI.Tools))
	for _, t := range d.CLI.Tools {
		v := CLIToolView{Name: t.Name, Description: t.Spec.Description, Output: t.Spec.Output}
		spec := t.Spec
		if d.Scope != config.ScopeProject {
			spec.ShowArgs = MaskArgs // shown as 'sluice servers' shows args
		}
		if tool, err := clitool.Compile(spec); err == nil {
			v.Argv = tool.Template()
			var def struct {
				Description string `json:"description"`
			}
			if json.Unmarshal(tool.Definition(), &def) == nil {
				v.Description = def.Description
			}
		}
		if v.Output == "" {
			v.Output = clitool.OutputText
		}
		out = append(out, v)
	}
	return out
}

// A Conn is a client transport by construction.
var _ mcp.Transport = (*clitool.Conn)(nil)
