package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Protocol versions this client speaks, preferred first.
var (
	// ModernVersions are the stateless revisions (per-request _meta).
	ModernVersions = []string{"2026-07-28"}
	// LegacyVersions are the initialize-handshake revisions; the first is
	// what the client asks for.
	LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
)

// The eras.
const (
	EraModern = "modern"
	EraLegacy = "legacy"
)

// Reserved _meta keys of the modern era.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// Handshake detects the era and completes the handshake within
// Options.InitializeTimeout. Era "" (auto): server/discover first, bounded
// by Options.DiscoverTimeout; a DiscoverResult or a recognised modern error
// (-32022 with data.supported) means modern; any other error or silence
// means legacy: initialize, then notifications/initialized. Failure is fatal
// for the client.
func (c *Client) Handshake(ctx context.Context) error {
	c.mu.Lock()
	if c.err != nil {
		e := c.callErr("handshake", c.err)
		c.mu.Unlock()
		return e
	}
	if c.state != Idle {
		st := c.state
		c.mu.Unlock()
		return &Error{Code: CodeProtocol, Server: c.server, Op: "handshake", Message: "handshake already done (state " + st.String() + ")"}
	}
	c.state = Starting
	c.mu.Unlock()

	hctx, cancel := context.WithTimeout(ctx, c.opts.InitializeTimeout)
	defer cancel()
	err := c.handshake(hctx, ctx)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeProtocol, Server: c.server, Op: "handshake", Message: err.Error(), Err: err}
		}
		c.fail(e)
		return e
	}
	c.mu.Lock()
	if c.err != nil {
		e := c.callErr("handshake", c.err)
		c.mu.Unlock()
		return e
	}
	c.state = Ready
	c.mu.Unlock()
	c.log.Debug("mcp handshake done", "era", c.Era(), "protocolVersion", c.ProtocolVersion())
	return nil
}

func (c *Client) handshake(ctx, parent context.Context) error {
	switch c.opts.Era {
	case "", EraModern, EraLegacy:
	default:
		return &Error{Code: CodeProtocol, Server: c.server, Op: "handshake", Message: fmt.Sprintf("unknown era %q (want \"\", \"modern\" or \"legacy\")", c.opts.Era)}
	}
	if c.opts.Era != EraLegacy {
		legacy, err := c.discover(ctx, parent, ModernVersions[0], true)
		if err != nil {
			return err
		}
		if !legacy {
			return nil
		}
		if c.opts.Era == EraModern {
			return &Error{Code: CodeProtocol, Server: c.server, Op: "server/discover", Message: "server does not speak the modern protocol (era: modern was required)"}
		}
	}
	return c.initialize(ctx, parent)
}

// handshakeErr turns a round-trip failure into the error the handshake
// reports: a timeout of the handshake context names InitializeTimeout.
func (c *Client) handshakeErr(op string, err error, ctx, parent context.Context) error {
	if ctx.Err() != nil && parent.Err() == nil {
		return &Error{Code: CodeTimeout, Server: c.server, Op: op,
			Message: "handshake did not complete within " + c.opts.InitializeTimeout.String(), Err: err}
	}
	if parent.Err() != nil {
		code := CodeAborted
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			code = CodeTimeout
		}
		return &Error{Code: code, Server: c.server, Op: op, Message: "handshake interrupted by the caller", Err: parent.Err()}
	}
	return err
}

// discover probes server/discover with version. It reports legacy=true when
// the server should be treated as legacy.
func (c *Client) discover(ctx, parent context.Context, version string, retry bool) (legacy bool, err error) {
	meta := c.modernMeta(version)
	params := append(append([]byte(`{"_meta":{`), meta...), "}}"...)
	budget := c.opts.DiscoverTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	m, err := c.roundTrip(ctx, "server/discover", params, &CallOptions{}, max(budget, time.Millisecond), false, false)
	if err != nil {
		if CodeOf(err) == CodeTimeout && ctx.Err() == nil {
			// Silence within the probe budget: legacy. A late answer is
			// dropped as a response to no pending request.
			c.log.Debug("server/discover unanswered; falling back to initialize", "budget", budget)
			return true, nil
		}
		return false, c.handshakeErr("server/discover", err, ctx, parent)
	}
	if m.Kind == KindError {
		if m.Error.Code == rpcUnsupportedProtoVersn {
			if supported, ok := supportedFromData(m.Error.Data); ok {
				// Retry once with the best common version, even the same
				// one: a server may refuse a first choice it then accepts.
				if v := pick(ModernVersions, supported); v != "" && retry {
					return c.discover(ctx, parent, v, false)
				}
				if pick(LegacyVersions, supported) != "" && pick(ModernVersions, supported) == "" {
					// The server answers in the modern way but only offers
					// legacy revisions: those are spoken through initialize.
					return true, nil
				}
				return false, &Error{Code: CodeProtocol, Server: c.server, Op: "server/discover", RPC: m.Error,
					Message: fmt.Sprintf("server supports protocol versions %s; sluice speaks %s", strings.Join(supported, ", "), strings.Join(append(slices.Clone(ModernVersions), LegacyVersions...), ", "))}
			}
		}
		// Any other error means legacy; the fallback never keys on a code.
		c.log.Debug("server/discover refused; falling back to initialize", "code", m.Error.Code)
		return true, nil
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Instructions      string                     `json:"instructions"`
		ServerInfo        json.RawMessage            `json:"serverInfo"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if len(m.Result) == 0 || m.Result[0] != '{' || json.Unmarshal(m.Result, &res) != nil {
		return false, &Error{Code: CodeProtocol, Server: c.server, Op: "server/discover", Message: "malformed DiscoverResult"}
	}
	if msg := checkResultType(m.Result); msg != "" {
		return false, &Error{Code: CodeProtocol, Server: c.server, Op: "server/discover", Message: msg}
	}
	if len(res.SupportedVersions) == 0 {
		// Not a DiscoverResult (a legacy server answering an unknown
		// method with an empty result): legacy, like any other answer.
		return true, nil
	}
	v := version
	if !slices.Contains(res.SupportedVersions, version) {
		v = pick(ModernVersions, res.SupportedVersions)
	}
	if v == "" {
		if pick(LegacyVersions, res.SupportedVersions) != "" {
			return true, nil
		}
		return false, &Error{Code: CodeProtocol, Server: c.server, Op: "server/discover",
			Message: fmt.Sprintf("server supports protocol versions %s; sluice speaks %s", strings.Join(res.SupportedVersions, ", "), strings.Join(append(slices.Clone(ModernVersions), LegacyVersions...), ", "))}
	}
	info := ServerInfo{Instructions: res.Instructions, Capabilities: res.Capabilities}
	si := res.ServerInfo
	if raw, ok := res.Meta[metaServerInfo]; ok {
		si = raw
	}
	parseImplementation(si, &info)
	c.mu.Lock()
	c.era, c.version, c.info = EraModern, v, info
	c.meta = c.modernMeta(v)
	c.metaVer = appendString(append(appendString(nil, metaProtocolVersion), ':'), v)
	c.mu.Unlock()
	return false, nil
}

func (c *Client) initialize(ctx, parent context.Context) error {
	caps := c.capabilities()
	p := make([]byte, 0, 128+len(caps))
	p = append(p, `{"protocolVersion":`...)
	p = appendString(p, LegacyVersions[0])
	p = append(p, `,"capabilities":`...)
	p = append(p, caps...)
	p = append(p, `,"clientInfo":`...)
	p = append(p, c.clientInfo()...)
	p = append(p, '}')
	timeout := c.opts.InitializeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	m, err := c.roundTrip(ctx, "initialize", p, &CallOptions{}, timeout, false, false)
	if err != nil {
		if CodeOf(err) == CodeTimeout && ctx.Err() == nil {
			err = &Error{Code: CodeTimeout, Server: c.server, Op: "initialize", Message: "handshake did not complete within " + c.opts.InitializeTimeout.String()}
		}
		return c.handshakeErr("initialize", err, ctx, parent)
	}
	if m.Kind == KindError {
		return &Error{Code: CodeServer, Server: c.server, Op: "initialize", RPC: m.Error}
	}
	var res struct {
		ProtocolVersion *string         `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	if len(m.Result) == 0 || m.Result[0] != '{' || json.Unmarshal(m.Result, &res) != nil || res.ProtocolVersion == nil {
		return &Error{Code: CodeProtocol, Server: c.server, Op: "initialize", Message: "malformed InitializeResult"}
	}
	if !slices.Contains(LegacyVersions, *res.ProtocolVersion) {
		return &Error{Code: CodeProtocol, Server: c.server, Op: "initialize",
			Message: fmt.Sprintf("server chose protocol version %q, which sluice does not speak (it speaks %s)", truncUTF8([]byte(*res.ProtocolVersion), 64), strings.Join(LegacyVersions, ", "))}
	}
	if len(res.Capabilities) > 0 && res.Capabilities[0] != '{' {
		return &Error{Code: CodeProtocol, Server: c.server, Op: "initialize", Message: "malformed InitializeResult: \"capabilities\" is not an object"}
	}
	info := ServerInfo{Instructions: res.Instructions, Capabilities: res.Capabilities}
	parseImplementation(res.ServerInfo, &info)
	c.mu.Lock()
	c.era, c.version, c.info = EraLegacy, *res.ProtocolVersion, info
	c.mu.Unlock()
	return c.Notify("notifications/initialized", nil)
}

func parseImplementation(raw json.RawMessage, info *ServerInfo) {
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	var w struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Title   string `json:"title"`
	}
	// Best effort: serverInfo is informational.
	_ = json.Unmarshal(raw, &w)
	info.Name, info.Version, info.Title = w.Name, w.Version, w.Title
}

func supportedFromData(data json.RawMessage) ([]string, bool) {
	if len(data) == 0 {
		return nil, false
	}
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(data, &d) != nil || len(d.Supported) == 0 {
		return nil, false
	}
	return d.Supported, true
}

// pick returns the first of ours (preference order) that theirs contains.
func pick(ours, theirs []string) string {
	for _, v := range ours {
		if slices.Contains(theirs, v) {
			return v
		}
	}
	return ""
}

func (c *Client) capabilities() []byte {
	if len(c.opts.Capabilities) == 0 {
		return []byte(`{}`)
	}
	if b, err := outboundJSON(c.opts.Capabilities); err == nil && b[0] == '{' {
		return b
	}
	c.log.Warn("Options.Capabilities is not a JSON object; advertising {}")
	return []byte(`{}`)
}

func (c *Client) clientInfo() []byte {
	b := []byte(`{"name":`)
	b = appendString(b, c.opts.ClientName)
	b = append(b, `,"version":`...)
	b = appendString(b, c.opts.ClientVersion)
	return append(b, '}')
}

// modernMeta returns the reserved _meta members (without braces).
func (c *Client) modernMeta(version string) []byte {
	var b []byte
	b = appendString(b, metaProtocolVersion)
	b = append(b, ':')
	b = appendString(b, version)
	b = append(b, ',')
	b = appendString(b, metaClientCapabilities)
	b = append(b, ':')
	b = append(b, c.capabilities()...)
	b = append(b, ',')
	b = appendString(b, metaClientInfo)
	b = append(b, ':')
	return append(b, c.clientInfo()...)
}

// outboundJSON validates raw JSON from a caller and compacts it if it holds
// newlines, so it can be embedded in one line. Number text is kept as is.
func outboundJSON(raw json.RawMessage) (json.RawMessage, error) {
	s := scanner{b: raw}
	s.ws()
	if _, err := s.value(); err != nil || !s.end() {
		return nil, errors.New("not valid JSON")
	}
	if bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0 || raw[0] == ' ' || raw[0] == '\t' {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return raw, nil
}

// withMeta validates params and adds the _meta members the request needs:
// the caller's Meta, the progress token, and in the modern era the reserved
// protocol fields.
func (c *Client) withMeta(params, extra json.RawMessage, token string) (json.RawMessage, error) {
	c.mu.Lock()
	ours := c.meta
	c.mu.Unlock()
	if len(params) == 0 || string(params) == "null" {
		if ours == nil && token == "" && len(extra) == 0 {
			return nil, nil
		}
		params = json.RawMessage(`{}`)
	}
	p, err := outboundJSON(params)
	if err != nil {
		return nil, err
	}
	if p[0] != '{' {
		return nil, errors.New("params are not a JSON object")
	}
	if ours == nil && token == "" && len(extra) == 0 {
		return p, nil
	}
	var add []byte
	if token != "" {
		add = append(add, `"progressToken":`...)
		add = append(add, token...)
	}
	if ours != nil {
		if add != nil {
			add = append(add, ',')
		}
		add = append(add, ours...)
	}
	if len(extra) == 0 && member(p, "_meta") == nil {
		// Splice "_meta":{...} in as the first member.
		out := make([]byte, 0, len(p)+len(add)+16)
		out = append(out, `{"_meta":{`...)
		out = append(out, add...)
		out = append(out, '}')
		rest := bytes.TrimLeft(p[1:], " \t")
		if len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...), nil
	}
	// General case: merge maps of raw members (numbers stay text).
	var pm map[string]json.RawMessage
	if err := json.Unmarshal(p, &pm); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := pm["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, errors.New("params._meta is not a JSON object")
		}
	}
	if len(extra) > 0 {
		var em map[string]json.RawMessage
		if err := json.Unmarshal(extra, &em); err != nil {
			return nil, errors.New("CallOptions.Meta is not a JSON object")
		}
		for k, v := range em {
			meta[k] = v
		}
	}
	var am map[string]json.RawMessage
	if err := json.Unmarshal(append(append([]byte{'{'}, add...), '}'), &am); err != nil {
		return nil, err
	}
	for k, v := range am {
		meta[k] = v
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	pm["_meta"] = mb
	return json.Marshal(pm)
}
