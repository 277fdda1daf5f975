package front

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway-mode surface. Descriptions teach the model the find ->
// describe -> call loop in a few lines each; TestGatewayToolsListSize keeps
// the whole tools/list answer under 6 KB whatever the catalog size.
const (
	toolFind       = "find"
	toolDescribe   = "describe"
	toolCall       = "call"
	toolReadResult = "read_result"
	toolExecute    = "execute"

	// flatReadResult is read_result's name in flat mode. Flat names are
	// upstream names, so a bare "read_result" could be any server's tool;
	// the gateway's own tool takes the <server>__<tool> form with the
	// reserved server id "sluice" (as the execute pseudo capability
	// sluice__execute does), and the flat planner never hands that name
	// to an upstream tool.
	flatReadResult = "sluice__read_result"

	maxFindLimit     = 50
	maxDescribeNames = 10
)

type gatewayTool struct {
	name     string
	title    string
	desc     string
	schema   string
	readOnly bool
	handler  func(f *front) mcp.ToolHandler
}

var gatewayTools = []gatewayTool{
	{
		name:  toolFind,
		title: "Find capabilities",
		desc: "Search every tool of every connected MCP server by keywords. Returns capability names (<server>__<tool>) with one-line summaries. " +
			"Start here, then describe what you need. An empty query lists everything up to limit. " +
			`Example: {"query":"read file"}`,
		schema: `{"type":"object","properties":{` +
			`"query":{"type":"string","description":"keywords, e.g. \"create issue\""},` +
			`"server":{"type":"string","description":"only this server id"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"max results"},` +
			`"refresh":{"type":"boolean","description":"with server: re-list its tools first (may start it)"}` +
			`},"additionalProperties":false}`,
		readOnly: true,
		handler:  (*front).findHandler,
	},
	{
		name:  toolDescribe,
		title: "Describe capabilities",
		desc: "Get the full description, JSON argument schema and Starlark signature of capabilities found with find. " +
			"Describe a capability before its first call. " +
			`Example: {"capabilities":["fs__read_file"]}. ` +
			`{"server":"fs"} instead returns every signature of one server as code-mode docs, for execute.`,
		schema: `{"type":"object","properties":{` +
			`"capabilities":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":10,"description":"capability names from find"},` +
			`"server":{"type":"string","description":"a server id: its code-mode docs instead"}` +
			`},"additionalProperties":false}`,
		readOnly: true,
		handler:  (*front).describeHandler,
	},
	{
		name:  toolCall,
		title: "Call a capability",
		desc: "Run one capability with arguments matching the schema from describe. " +
			`Example: {"capability":"fs__read_file","arguments":{"path":"README.md"}}. ` +
			"Returns the tool's own result. A large result is shortened and names a handle; read_result reads the rest. " +
			"An error result says how to fix the call.",
		schema: `{"type":"object","properties":{` +
			`"capability":{"type":"string","description":"<server>__<tool>, as listed by find"},` +
			`"arguments":{"type":"object","description":"the tool's arguments"}` +
			`},"required":["capability"],"additionalProperties":false}`,
		handler: (*front).callHandler,
	},
	{
		name:  toolReadResult,
		title: "Read a stored result",
		desc: "Read part of a large result that was shortened: pass the handle it named (its marker says \"stored under handle ...\"), a byte offset and a length. " +
			"Continue from the next offset until the answer says the end is reached. ref is accepted as another name for handle. " +
			`Example: {"handle":"r-1a2b","offset":0,"length":16384}`,
		schema: `{"type":"object","properties":{` +
			`"handle":{"type":"string","description":"the handle a shortened result named"},` +
			`"ref":{"type":"string","description":"same as handle"},` +
			`"offset":{"type":"integer","minimum":0,"description":"byte offset (default 0)"},` +
			`"length":{"type":"integer","minimum":1,"maximum":1048576,"description":"bytes to read (default 16384)"}` +
			`},"additionalProperties":false}`,
		readOnly: true,
		handler:  (*front).readResultHandler,
	},
	{
		name:  toolExecute,
		title: "Run a script",
		desc: "Run a Starlark (Python-like) script that calls capabilities as functions: each server is a module named by its id, each tool a function with keyword arguments, " +
			`e.g. text = fs.read_text_file(path="a.txt"). describe shows a capability's signature; {"server":"fs"} all of one module's. ` +
			"A failing tool raises; " + `r = call("fs__read_text_file", {"path": "a.txt"})` + " returns struct(ok, value, error) instead. " +
			`parallel([("fs__read_text_file", {"path": p}) for p in paths])` + " runs calls at once and returns those structs in order " +
			`(dicts {"tool","args"} or {"capability","arguments"} work too). ` +
			"Use it for loops, joins and filtering so only the final answer returns: set the global result to it (the last print() lines and a per-capability call summary come back too). " +
			"Scripts are bounded in steps, time and calls.",
		schema: `{"type":"object","properties":{` +
			`"script":{"type":"string","description":"Starlark source"},` +
			`"timeoutMs":{"type":"integer","minimum":1,"description":"wall-time bound in ms (the configured limit still applies)"}` +
			`},"required":["script"],"additionalProperties":false}`,
		handler: (*front).executeHandler,
	},
}

// syncGatewayTools registers the fixed surface for the current Features
// and surface. In flat mode that is only read_result (as flatReadResult):
// the upstream tools are the rest of the surface, and a shortened result
// names a handle only read_result can page. Tools that leave are removed
// before new ones are added.
func (f *front) syncGatewayTools() {
	f.mu.Lock()
	feat := f.features
	f.mu.Unlock()
	flat := f.flatNow.Load()
	want := map[string]gatewayTool{}
	var order []string
	for _, gt := range gatewayTools {
		if flat && gt.name != toolReadResult {
			continue
		}
		if (gt.name == toolReadResult && !feat.ReadResult) || (gt.name == toolExecute && !feat.Execute) {
			continue
		}
		name := gt.name
		if flat {
			name = flatReadResult
		}
		want[name] = gt
		order = append(order, name)
	}
	f.mu.Lock()
	var gone []string
	for name, have := range f.gwTools {
		if _, keep := want[name]; have && !keep {
			gone = append(gone, name)
		}
	}
	var add []string
	for _, name := range order {
		if !f.gwTools[name] {
			add = append(add, name)
		}
	}
	f.gwTools = map[string]bool{}
	for name := range want {
		f.gwTools[name] = true
	}
	paging := feat.ReadResult
	tplChange := paging != f.resultTpl
	f.resultTpl = paging
	f.mu.Unlock()
	sort.Strings(gone)
	if len(gone) > 0 {
		f.srv.RemoveTools(gone...)
	}
	if tplChange && !paging {
		f.srv.RemoveResourceTemplates(ResultURITemplate)
	}
	if tplChange && paging {
		// Shortened results also link to the stored whole as a resource
		// (sluice://results/<handle>), readable in pages.
		f.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: ResultURITemplate, Name: "sluice-result",
			Description: "a stored full result, one page per read; ?offset=N continues", MIMEType: "application/json"},
			f.resourceHandler(""))
	}
	for _, name := range add {
		gt := want[name]
		t := &mcp.Tool{
			Name:        name,
			Title:       gt.title,
			Description: gt.desc,
			InputSchema: json.RawMessage(gt.schema),
		}
		if gt.readOnly {
			t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
		}
		f.srv.AddTool(t, gt.handler(f))
	}
}

func ptr[T any](v T) *T { return &v }

// ResultURITemplate is the resource template of stored results; the
// backend's ReadResource gets server "" for them.
const ResultURITemplate = "sluice://results/{handle}{?offset}"

func (f *front) findHandler() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.runTool(ctx, req, "sluice.find", func(ctx context.Context, p Peer) (json.RawMessage, error) {
			var a FindRequest
			if err := decodeArgs(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			if a.Limit < 0 || a.Limit > maxFindLimit {
				return nil, &ToolError{Message: fmt.Sprintf("limit %d is out of range.", a.Limit), Remedy: fmt.Sprintf("use a limit between 1 and %d, or omit it.", maxFindLimit)}
			}
			if a.Refresh && a.Server == "" {
				return nil, &ToolError{Message: "refresh needs a server.", Remedy: `name the server to re-list, e.g. {"server":"fs","refresh":true}.`}
			}
			return f.b.Find(ctx, a, p)
		})
	}
}

func (f *front) describeHandler() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.runTool(ctx, req, "sluice.describe", func(ctx context.Context, p Peer) (json.RawMessage, error) {
			var a DescribeRequest
			if err := decodeArgs(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			if a.Server != "" && len(a.Capabilities) > 0 {
				return nil, &ToolError{Message: "describe takes capabilities or a server, not both.", Remedy: `e.g. {"capabilities":["fs__read_file"]} or {"server":"fs"}.`}
			}
			if a.Server != "" {
				return f.b.Describe(ctx, a, p)
			}
			if len(a.Capabilities) == 0 || len(a.Capabilities) > maxDescribeNames {
				return nil, &ToolError{Message: fmt.Sprintf("describe takes 1 to %d capability names; got %d.", maxDescribeNames, len(a.Capabilities)), Remedy: `pass names from find, e.g. {"capabilities":["fs__read_file"]}, or a server for its code-mode docs, e.g. {"server":"fs"}.`}
			}
			return f.b.Describe(ctx, a, p)
		})
	}
}

func (f *front) callHandler() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			Capability string          `json:"capability"`
			Arguments  json.RawMessage `json:"arguments"`
		}
		argErr := decodeArgs(req.Params.Arguments, &a)
		label := a.Capability
		if argErr != nil || label == "" {
			label = "sluice.call"
		}
		return f.runTool(ctx, req, label, func(ctx context.Context, p Peer) (json.RawMessage, error) {
			if argErr != nil {
				return nil, argErr
			}
			if a.Capability == "" {
				return nil, &ToolError{Message: "capability is missing.", Remedy: `find the capability first, then call e.g. {"capability":"fs__read_file","arguments":{"path":"a.txt"}}.`}
			}
			args := a.Arguments
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			} else if args[0] != '{' {
				return nil, &ToolError{Message: "arguments must be a JSON object.", Remedy: "pass the tool's arguments as an object keyed by parameter name (see describe)."}
			}
			return f.b.Call(ctx, f.callRequest(req, a.Capability, args), p)
		})
	}
}

// callRequest builds a CallRequest, carrying a multi round-trip retry.
func (f *front) callRequest(req *mcp.CallToolRequest, capability string, args json.RawMessage) CallRequest {
	cr := CallRequest{Capability: capability, Arguments: args, Tool: req.Params.Name, RequestState: req.Params.RequestState}
	if len(req.Params.InputResponses) > 0 {
		if raw, err := json.Marshal(req.Params.InputResponses); err == nil {
			cr.InputResponses = raw
		}
	}
	return cr
}

func (f *front) readResultHandler() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.runTool(ctx, req, "sluice.read_result", func(ctx context.Context, p Peer) (json.RawMessage, error) {
			var a ReadResultRequest
			if err := decodeArgs(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			if a.Handle != "" && a.Ref != "" && a.Handle != a.Ref {
				return nil, &ToolError{Message: "handle and ref name different results; ref is only another name for handle.", Remedy: "pass just the handle."}
			}
			if a.Handle == "" {
				a.Handle = a.Ref
			}
			a.Ref = a.Handle
			if a.Handle == "" || a.Offset < 0 || a.Length < 0 || a.Length > 1<<20 {
				return nil, &ToolError{Message: "read_result needs a handle, offset >= 0 and 0 < length <= 1048576.", Remedy: `e.g. {"handle":"<handle from the shortened result>","offset":0,"length":16384}.`}
			}
			return f.b.ReadResult(ctx, a, p)
		})
	}
}

func (f *front) executeHandler() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.runTool(ctx, req, "sluice.execute", func(ctx context.Context, p Peer) (json.RawMessage, error) {
			var a ExecuteRequest
			if err := decodeArgs(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			if a.Script == "" {
				return nil, &ToolError{Message: "script is empty.", Remedy: "pass Starlark source in script."}
			}
			if a.TimeoutMs < 0 {
				return nil, &ToolError{Message: fmt.Sprintf("timeoutMs %d is negative.", a.TimeoutMs), Remedy: "pass a positive number of milliseconds, or omit timeoutMs."}
			}
			return f.b.Execute(ctx, a, p)
		})
	}
}
