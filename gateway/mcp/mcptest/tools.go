package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// BuiltinTools are the tools every fixture lists, in order:
//
//	echo            {text}        -> text (readOnlyHint)
//	add             {a, b}        -> exact decimal sum as a number literal in
//	                                 structuredContent.sum and as text (readOnlyHint)
//	slow            {ms, steps}   -> sleeps ms, one progress notification per step
//	                                 when _meta.progressToken is given; honours cancel
//	huge            {bytes}       -> text of that many bytes (readOnlyHint)
//	structured      {}            -> structuredContent only, empty content (readOnlyHint)
//	meta            {}            -> what the server saw: era, protocolVersion, _meta (readOnlyHint)
//	bad_iserror     {}            -> isError:"true" (a string: a protocol violation)
//	fail            {}            -> isError:true
//	list_changed    {}            -> adds late_tool and sends notifications/tools/list_changed
//	ask_roots       {}            -> sends roots/list to the client (legacy) and returns the answer
//	stderr          {text}        -> writes text to stderr
//	crash           {}            -> writes a torn frame and exits
//	grandchild      {}            -> spawns a SIGTERM-ignoring sleeper in the process group
//
// plus late_tool once list_changed was called, and tool_0001..tool_N when
// Options.Tools is N.
var BuiltinTools = []string{
	"echo", "add", "slow", "huge", "structured", "meta", "bad_iserror", "fail",
	"list_changed", "ask_roots", "stderr", "crash", "grandchild",
}

type toolDef struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
}

const (
	noArgs   = `{"type":"object","additionalProperties":false}`
	readOnly = `{"readOnlyHint":true,"destructiveHint":false,"openWorldHint":false}`
	destruct = `{"readOnlyHint":false,"destructiveHint":true}`
)

func builtinDefs() []toolDef {
	return []toolDef{
		{Name: "echo", Title: "Echo", Description: "Returns its text argument.",
			InputSchema: raw(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Annotations: raw(readOnly)},
		{Name: "add", Title: "Add", Description: "Adds two numbers exactly; the sum is a number literal that may not fit a float64.",
			InputSchema:  raw(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
			OutputSchema: raw(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`),
			Annotations:  raw(readOnly)},
		{Name: "slow", Description: "Sleeps ms milliseconds in steps, reporting progress; stops when cancelled.",
			InputSchema: raw(`{"type":"object","properties":{"ms":{"type":"integer"},"steps":{"type":"integer"}}}`),
			Annotations: raw(readOnly)},
		{Name: "huge", Description: "Returns a text block of the given number of bytes.",
			InputSchema: raw(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`),
			Annotations: raw(readOnly)},
		{Name: "structured", Description: "Returns structuredContent only, with an empty content array.",
			InputSchema:  raw(noArgs),
			OutputSchema: raw(`{"type":"object","properties":{"city":{"type":"string"},"temperature":{"type":"number"},"ok":{"type":"boolean"}}}`),
			Annotations:  raw(readOnly)},
		{Name: "meta", Description: "Reports the era, protocol version and _meta the server received.",
			InputSchema: raw(noArgs), Annotations: raw(readOnly)},
		{Name: "bad_iserror", Description: "Returns isError as the string \"true\" (invalid).",
			InputSchema: raw(noArgs)},
		{Name: "fail", Description: "Returns a tool error (isError true).",
			InputSchema: raw(noArgs)},
		{Name: "list_changed", Description: "Adds late_tool and sends notifications/tools/list_changed.",
			InputSchema: raw(noArgs)},
		{Name: "ask_roots", Description: "Waits ms milliseconds (default 0), then sends roots/list to the client and returns its answer (legacy era only).",
			InputSchema: raw(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)},
		{Name: "stderr", Description: "Writes its text argument to stderr.",
			InputSchema: raw(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		{Name: "crash", Description: "Writes half a frame and exits mid-call.",
			InputSchema: raw(noArgs), Annotations: raw(destruct)},
		{Name: "grandchild", Description: "Spawns a grandchild that ignores SIGTERM and sleeps.",
			InputSchema: raw(noArgs), Annotations: raw(destruct)},
	}
}

func lateTool() toolDef {
	return toolDef{Name: "late_tool", Description: "Appears after list_changed was called.",
		InputSchema: raw(noArgs), Annotations: raw(readOnly)}
}

func generatedTool(i int) toolDef {
	return toolDef{
		Name:        fmt.Sprintf("tool_%04d", i),
		Description: fmt.Sprintf("Generated tool number %d.", i),
		InputSchema: raw(`{"type":"object","properties":{"x":{"type":"string"}}}`),
		Annotations: raw(readOnly),
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// textResult is {"content":[{"type":"text","text":s}]}.
func textResult(s string) map[string]any {
	return map[string]any{"content": []any{textBlock(s)}}
}

func textBlock(s string) map[string]any {
	return map[string]any{"type": "text", "text": s}
}

func toolError(format string, a ...any) map[string]any {
	r := textResult(fmt.Sprintf(format, a...))
	r["isError"] = true
	return r
}

// decodeArgs decodes a tools/call arguments object keeping numbers as text.
func decodeArgs(args json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return out, nil
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object: %v", err)
	}
	return out, nil
}

func argInt(args map[string]any, key string, def int) (int, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return def, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("argument %q must be an integer", key)
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<31 {
		return 0, fmt.Errorf("argument %q must be a non-negative integer, got %s", key, n)
	}
	return int(i), nil
}

func argString(args map[string]any, key string) (string, bool) {
	s, ok := args[key].(string)
	return s, ok
}

// exactSum adds two JSON number literals exactly and returns the sum as a
// JSON number literal (no float64 on the way).
func exactSum(a, b json.Number) (string, error) {
	var x, y big.Rat
	if _, ok := x.SetString(string(a)); !ok {
		return "", fmt.Errorf("a is not a number: %s", a)
	}
	if _, ok := y.SetString(string(b)); !ok {
		return "", fmt.Errorf("b is not a number: %s", b)
	}
	x.Add(&x, &y)
	// Decimal inputs give a denominator of the form 2^i*5^j: the sum has
	// max(i, j) fractional digits.
	d := new(big.Int).Set(x.Denom())
	two, five, zero := big.NewInt(2), big.NewInt(5), new(big.Int)
	m := new(big.Int)
	var i, j int
	for m.Mod(d, two).Cmp(zero) == 0 {
		d.Quo(d, two)
		i++
	}
	for m.Mod(d, five).Cmp(zero) == 0 {
		d.Quo(d, five)
		j++
	}
	s := x.FloatString(max(i, j))
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		s = s[1:]
	}
	return s, nil
}
