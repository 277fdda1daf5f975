package mcptest

import (
	"encoding/json"
	"strings"
)

// LeakKey is the secret ModeLeaky plants: an AWS access key id (the
// documentation example), which builtin:redact masks.
const LeakKey = "AKIAIOSFODNN7EXAMPLE"

// LeakURI is the resource ModeLeaky lists; its text carries LeakKey.
const LeakURI = "leak://secret/" + LeakKey

// LeakTemplate is ModeLeaky's resource template, with the key in its
// literal part; a read of it expanded answers "template body ID KEY".
const LeakTemplate = "leak://t/" + LeakKey + "/{id}"

// leakyDefs are the tools of ModeLeaky; each puts LeakKey somewhere else.
func leakyDefs() []toolDef {
	def := func(name, desc string) toolDef {
		return toolDef{Name: name, Description: desc, InputSchema: raw(noArgs), Annotations: raw(readOnly)}
	}
	return []toolDef{
		def("leak_error", "Fails with a JSON-RPC error whose message and data carry the key."),
		def("leak_big_error", "Fails with a JSON-RPC error of 600 KB."),
		def("leak_notify", "Sends progress (when asked for) and a log message carrying the key, then answers."),
		def("leak_fields", "Returns the key in every field of a result but the text of a text item."),
		def("leak_split", "Returns the key split across two adjacent text items."),
		def("leak_structured", "Returns 100 KB of structuredContent (keys carrying the key) and no content."),
		def("leak_huge_text", "Returns 1 MiB of text with the key in it."),
		def("leak_dense_text", "Returns 3 MiB of log lines with the key on every line (the redactor's most expensive input)."),
		def("leak_sampling", "Sends sampling/createMessage whose prompts carry the key to the client (legacy era) and returns its answer."),
		def("leak_elicit", "Sends elicitation/create whose message and schema carry the key to the client (legacy era) and returns its answer."),
		def("leak_escaped_content", "Returns 200 KB of text whose member names are escaped (\"cont\\u0065nt\", \"t\\u0065xt\"), the key in it."),
		{Name: "leak_long_title", Title: "title " + LeakKey + " " + strings.Repeat("long title ", 135<<10/11),
			Description: "A tool whose 135 KB title carries the key.", InputSchema: raw(noArgs), Annotations: raw(readOnly)},
	}
}

// escapedContent stands for the member name "cont\u0065nt" in a result
// until frame writes it: encoding/json cannot write an escaped name.
const escapedContent = "mcptest-escaped-content"

// leakyTool runs a ModeLeaky tool; ok is false for other names.
func (s *server) leakyTool(c call) (res map[string]any, e *rpcErr, ok bool) {
	k := LeakKey
	switch c.name {
	case "leak_error":
		return nil, &rpcErr{code: -32000, msg: "upstream failure near " + k, data: map[string]any{"detail": "key " + k, k: true}}, true
	case "leak_big_error":
		return nil, &rpcErr{code: -32000, msg: "big failure " + k + " " + strings.Repeat("x", 600<<10), data: map[string]any{"trace": strings.Repeat("y", 1000)}}, true
	case "leak_notify":
		if token, has := c.meta["progressToken"]; has {
			_ = s.notify("notifications/progress", map[string]any{"progressToken": token, "progress": 1, "total": 2, "message": "working on " + k})
		}
		_ = s.notify("notifications/message", map[string]any{"level": "info", "logger": "leak " + k, "data": map[string]any{"note": "log " + k, k: 1}})
		return textResult("notified"), nil, true
	case "leak_fields":
		items := `[` +
			`{"type":"t\u0065xt","t\u0065xt":"escaped name ` + k + `"},` +
			`{"type":"text","text":"ok","annotations":{"audience":["user"],"note":"` + k + `"},"_meta":{"` + k + `":"m"}},` +
			`{"type":"resource","resource":{"uri":"file:///` + k + `","mimeType":"text/plain","text":"body ` + k + `"}},` +
			`{"type":"resource_link","uri":"https://host/` + k + `","name":"` + k + `","title":"t ` + k + `","description":"d ` + k + `"},` +
			`{"type":"image","data":"aGk=","mimeType":"image/png","annotations":{"k":"` + k + `"}}]`
		return map[string]any{
			"content":           json.RawMessage(items),
			"structuredContent": json.RawMessage(`{"` + k + `":{"nested":["` + k + `"]}}`),
			"_meta":             json.RawMessage(`{"trace":"` + k + `"}`),
		}, nil, true
	case "leak_split":
		return map[string]any{"content": []any{textBlock("id " + k[:8]), textBlock(k[8:] + " done")}}, nil, true
	case "leak_structured":
		m := map[string]any{}
		for i := 0; len(m) < 2000; i++ {
			m[k+"-"+strings.Repeat("k", 8)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = strings.Repeat("v", 40) + " " + k
		}
		return map[string]any{"structuredContent": m}, nil, true
	case "leak_escaped_content":
		text := "head " + k + " " + strings.Repeat("padding words ", 200<<10/14) + " tail " + k
		b, _ := json.Marshal(text)
		return map[string]any{escapedContent: json.RawMessage(`[{"type":"t\u0065xt","t\u0065xt":` + string(b) + `}]`)}, nil, true
	case "leak_long_title":
		return textResult("titled"), nil, true
	case "leak_dense_text":
		line := "2026-12-01T10:00:00Z fetched key " + k + " for the page, status ok\n"
		return textResult(strings.Repeat(line, 3<<20/len(line))), nil, true
	case "leak_huge_text":
		line := strings.Repeat("log line without secrets, just words and numbers 12345\n", 10)
		var b strings.Builder
		for b.Len() < 1<<20 {
			b.WriteString(line)
			if b.Len()%(64<<10) < len(line) {
				b.WriteString("key " + k + "\n")
			}
		}
		return textResult(b.String()), nil, true
	}
	return nil, nil, false
}

// capabilities is what the handshake declares: tools always; resources,
// prompts and logging in ModeLeaky; resources and prompts in
// ModeHugeListings.
func (s *server) capabilities() map[string]any {
	c := map[string]any{"tools": map[string]any{"listChanged": true}}
	if s.opts.Has(ModeLeaky) {
		c["resources"] = map[string]any{}
		c["prompts"] = map[string]any{}
		c["logging"] = map[string]any{}
		c["completions"] = map[string]any{}
	}
	if s.opts.Has(ModeHugeListings) {
		c["resources"] = map[string]any{}
		c["prompts"] = map[string]any{}
	}
	return c
}

// leakyMethod answers the resource, prompt and completion methods of
// ModeLeaky; ok is false for other methods.
func leakyMethod(method string, params json.RawMessage) (map[string]any, *rpcErr, bool) {
	k := LeakKey
	switch method {
	case "resources/list":
		return map[string]any{"resources": []any{map[string]any{"uri": LeakURI, "name": "secret", "mimeType": "text/plain"}}}, nil, true
	case "resources/templates/list":
		return map[string]any{"resourceTemplates": []any{map[string]any{"uriTemplate": LeakTemplate, "name": "secret-template"}}}, nil, true
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p)
		if id, ok := strings.CutPrefix(p.URI, strings.TrimSuffix(LeakTemplate, "{id}")); ok {
			return map[string]any{"contents": []any{map[string]any{"uri": p.URI, "mimeType": "text/plain", "text": "template body " + id + " " + k}}}, nil, true
		}
		if strings.HasPrefix(p.URI, "leak://t/") {
			return nil, &rpcErr{code: CodeInvalidParams, msg: "no such resource: " + p.URI}, true
		}
		return map[string]any{"contents": []any{map[string]any{"uri": LeakURI, "mimeType": "text/plain", "text": "resource body " + k}}}, nil, true
	case "prompts/list":
		return map[string]any{"prompts": []any{map[string]any{"name": "leak", "description": "a prompt"}}}, nil, true
	case "prompts/get":
		return map[string]any{"description": "d " + k, "messages": []any{map[string]any{"role": "user", "content": textBlock("prompt " + k)}}}, nil, true
	case "completion/complete":
		return map[string]any{"completion": map[string]any{"values": []any{"v " + k}, "hasMore": false}}, nil, true
	case "logging/setLevel":
		return map[string]any{}, nil, true
	}
	return nil, nil, false
}
