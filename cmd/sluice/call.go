package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"sluice/gateway"
)

// maxArgsBytes bounds --args read from a file or stdin.
const maxArgsBytes = 64 << 20

// approvalWait bounds how long an approval prompt waits for an answer.
const approvalWait = 5 * time.Minute

func init() {
	register("call", &command{
		summary: "call one tool directly (launches its server when trusted)",
		help: `Usage: sluice call CAPABILITY [KEY=VALUE ...] [--args JSON|@FILE|-] [--json] [--yes] [--profile NAME]
                   [--timeout DURATION] [--project DIR]

Calls one capability (SERVER__TOOL, as listed by 'sluice find'). The server is
launched on demand when it is trusted; untrusted and stale project servers are
never launched.

Arguments (one JSON object):
  KEY=VALUE        one argument each. VALUE is taken as JSON when it parses
                   (42, 12345678901234567890, true, null, {"a":1}, ["x"],
                   "quoted") and as a string otherwise (hello, a.txt, 0123).
                   Numbers keep their exact text: nothing passes through a
                   floating-point value. Split at the first '='.
                   The tool's input schema decides when it names the key's
                   type: where it says string, s=100 and s=true are sent as
                   the text "100" and "true"; where it allows no string,
                   plain text like n=abc is refused with exit 2. To send a
                   string whatever the schema says, quote it as JSON:
                   s='"100"'. --args is always sent exactly as given.
  --args JSON      the whole object, e.g. --args '{"path": "a.txt"}'
  --args @FILE     read the object from FILE
  --args -         read the object from stdin
  Use either --args or KEY=VALUE, not both. No arguments = {}.
  Flags may come anywhere; after a lone -- everything is an argument
  (sluice call srv__tool -- --weird-key=1).

Output:
  By default text content is printed as is, structuredContent is
  pretty-printed, images, audio and embedded resources are summarized (type,
  mimeType, size) and resource links are listed. --json prints the result
  object exactly as it arrived (after result filters).

Approval:
  Calls with action class read (declared, recorded on the trust record, or,
  when neither sets a class, a readOnlyHint tool of a trusted server) and
  capabilities matching the user file's 'approve:' globs run at once. Any other call needs approval:
  - --yes approves it;
  - when stdin and stderr are both terminals (and --args - did not consume
    stdin), sluice asks on stderr and waits up to 5 minutes for y/N;
  - otherwise the call is refused (exit 4) and the message names the exact
    ways to approve it.

Flags:
  --args SRC          arguments as JSON, @FILE or - (stdin)
  --json              print the raw result JSON
  --yes               approve the call without asking
  --timeout DURATION  give up after DURATION (e.g. 30s); the server's timeoutMs
                      (default 60s) applies too, whichever is shorter
  --project DIR       the project root (default: found from the working
                      directory)
` + profileHelpWide + `

Exit status:
  0    the tool ran and succeeded
  1    sluice or the server failed: spawn, handshake, crash, timeout, protocol
       violation, crash loop, a fail-closed filter, unreadable files
  2    bad input: flags, arguments, an unknown server or tool
  3    the tool ran and reported an error (isError: true); its content is printed
  4    refused: the server is untrusted or stale ('sluice trust ...'), or the
       call needs approval that was not given or was declined
  130  interrupted (SIGINT or SIGTERM); the server was stopped
`,
		run: runCall,
	})
}

func runCall(e *env) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	argsSrc := fs.String("args", "", "")
	asJSON := fs.Bool("json", false, "")
	yes := fs.Bool("yes", false, "")
	timeout := fs.Duration("timeout", 0, "")
	project := fs.String("project", "", "")
	profile := fs.String("profile", "", "")
	pos, code, ok := flagsOrExit(e, "call", fs)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageErr(e, "call", "missing CAPABILITY (SERVER__TOOL); run 'sluice find' to list them")
	}
	if *timeout < 0 {
		return usageErr(e, "call", "--timeout must be positive, got %s", *timeout)
	}
	capName, kvs := pos[0], pos[1:]
	argsSet := false
	fs.Visit(func(f *flag.Flag) { argsSet = argsSet || f.Name == "args" })
	if argsSet && len(kvs) > 0 {
		return usageErr(e, "call", "use either --args or KEY=VALUE arguments, not both")
	}
	var args json.RawMessage
	var pairs []kvArg
	var err error
	stdinUsed := false
	if argsSet {
		stdinUsed = *argsSrc == "-"
		args, err = readArgs(*argsSrc, e.stdin)
	} else {
		pairs, err = parseKV(kvs)
	}
	if err != nil {
		return usageErr(e, "call", "%v", err)
	}

	g, closeFn, code, ok := openGatewayProfile(e, "call", *project, *profile)
	if !ok {
		return code
	}
	defer closeFn()
	if near := separatorSlip(g, capName); near != "" {
		return usageErr(e, "call", "%q is not a capability name (SERVER__TOOL, with two underscores); did you mean %s?", capName, near)
	}
	ctx, cancel := interruptible()
	defer cancel()
	if needsSchema(pairs) {
		if err := coerceArgs(pairs, toolSchema(ctx, g, capName)); err != nil {
			return usageErr(e, "call", "%v", err)
		}
	}
	if !argsSet {
		args = kvObject(pairs)
	}

	req := gateway.CallRequest{Capability: capName, Arguments: args, Yes: *yes, Timeout: *timeout}
	if !stdinUsed && isTerminal(e.stdin) && isTerminal(e.stderr) {
		req.Approve = func(ctx context.Context, r gateway.ApprovalRequest) (bool, error) {
			return askApproval(ctx, e, r)
		}
	}
	// Progress arrives on the client's goroutine; the line is erased before
	// anything else is printed.
	var pmu sync.Mutex
	shown, done := false, false
	if isTerminal(e.stderr) {
		req.OnProgress = func(p json.RawMessage) {
			pmu.Lock()
			defer pmu.Unlock()
			if !done {
				shown = true
				fmt.Fprintf(e.stderr, "\r\033[K%s", clean(progressLine(p)))
			}
		}
	}
	res, err := g.Call(ctx, req)
	pmu.Lock()
	done = true
	if shown {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	pmu.Unlock()
	if err != nil {
		return failed(ctx, e.stderr, "call", err)
	}
	defer res.Release() // once printed
	if *asJSON {
		e.stdout.Write(bytes.TrimRight(res.Result, "\n"))
		fmt.Fprintln(e.stdout)
	} else if err := printResult(e.stdout, res.Result, isTerminal(e.stdout)); err != nil {
		fmt.Fprintf(e.stderr, "sluice call: %s: %v; the raw result follows\n", capName, err)
		e.stdout.Write(res.Result)
		fmt.Fprintln(e.stdout)
	}
	if res.IsError {
		fmt.Fprintf(e.stderr, "sluice call: %s reported an error (isError: true)\n", capName)
		return exitToolError
	}
	return exitOK
}

// readArgs reads --args: inline JSON, @FILE or - (stdin). The bytes are kept
// as they are: numbers are never re-encoded.
func readArgs(src string, stdin io.Reader) (json.RawMessage, error) {
	var b []byte
	where := "--args"
	switch {
	case src == "-":
		where = "--args - (stdin)"
		var err error
		b, err = io.ReadAll(io.LimitReader(stdin, maxArgsBytes+1))
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read: %v", where, err)
		}
	case strings.HasPrefix(src, "@"):
		where = "--args " + src
		f, err := os.Open(src[1:])
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read the arguments file: %v", where, err)
		}
		defer f.Close()
		b, err = io.ReadAll(io.LimitReader(f, maxArgsBytes+1))
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read the arguments file: %v", where, err)
		}
	default:
		b = []byte(src)
	}
	if len(b) > maxArgsBytes {
		return nil, fmt.Errorf("%s: more than %d bytes of arguments", where, maxArgsBytes)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s: not valid JSON: %v; pass one object like '{\"path\": \"a.txt\"}'", where, jsonSyntaxErr(b))
	}
	if b[0] != '{' {
		return nil, fmt.Errorf("%s: arguments must be one JSON object like '{\"path\": \"a.txt\"}', not %s", where, jsonKind(b[0]))
	}
	return json.RawMessage(b), nil
}

func jsonSyntaxErr(b []byte) error {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	err := d.Decode(&v)
	if err == nil {
		err = errors.New("trailing data after the first value")
	}
	return err
}

func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// kvArg is one KEY=VALUE argument: its key, the JSON it is sent as, and
// the text as typed.
type kvArg struct {
	key, text string
	json      []byte
	// guessed: the value was not quoted and parsed as JSON that is no
	// string (100, true, null, [1], {}); the tool's schema may say it is
	// text (see coerceArgs).
	guessed bool
	// plain: the value is no JSON at all and is sent as a string.
	plain bool
}

// parseKV splits KEY=VALUE pairs, in order. A value that parses as JSON
// is used as that JSON text, byte for byte; anything else is a string.
func parseKV(kvs []string) ([]kvArg, error) {
	seen := map[string]bool{}
	out := make([]kvArg, 0, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("argument %q is not KEY=VALUE; pass tool arguments as KEY=VALUE or --args JSON", kv)
		}
		if k == "" {
			return nil, fmt.Errorf("argument %q has an empty key; write KEY=VALUE", kv)
		}
		if !utf8.ValidString(k) {
			return nil, fmt.Errorf("argument key %q is not valid UTF-8", k)
		}
		if seen[k] {
			return nil, fmt.Errorf("argument %q is given twice; give each key once", k)
		}
		seen[k] = true
		a := kvArg{key: k, text: v}
		if t := strings.TrimSpace(v); t != "" && json.Valid([]byte(t)) {
			a.json, a.guessed = []byte(t), t[0] != '"'
		} else {
			a.json, a.plain = jsonString(v), true
		}
		out = append(out, a)
	}
	return out, nil
}

// kvObject is the arguments object of parsed pairs, in order.
func kvObject(as []kvArg) json.RawMessage {
	if len(as) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, a := range as {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(a.key))
		b.WriteByte(':')
		b.Write(a.json)
	}
	b.WriteByte('}')
	return json.RawMessage(b.Bytes())
}

// kvArgs builds the arguments object from KEY=VALUE pairs (parseKV).
func kvArgs(kvs []string) (json.RawMessage, error) {
	as, err := parseKV(kvs)
	if err != nil {
		return nil, err
	}
	return kvObject(as), nil
}

// jsonKindOf names the JSON type of valid JSON text t as a schema's type
// keyword does.
func jsonKindOf(t []byte) string {
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(t, ".eE") {
		return "number"
	}
	return "integer"
}

// schemaTypes reads the top-level property types of a tool's input
// schema: property name to the types its "type" keyword allows. A
// property without a plain "type" is left out.
func schemaTypes(schema json.RawMessage) map[string][]string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := map[string][]string{}
	for name, p := range s.Properties {
		var one string
		var many []string
		switch {
		case json.Unmarshal(p.Type, &one) == nil && one != "":
			out[name] = []string{one}
		case json.Unmarshal(p.Type, &many) == nil && len(many) > 0:
			out[name] = many
		}
	}
	return out
}

func allows(types []string, kind string) bool {
	for _, t := range types {
		if t == kind || (t == "number" && kind == "integer") {
			return true
		}
	}
	return false
}

// coerceArgs fits KEY=VALUE arguments to the tool's input schema the way
// they were meant: an unquoted value that parsed as JSON (s=100) is sent
// as the text typed when the schema says the property is a string and
// does not allow what it parsed as. A value that is plain text where the
// schema allows no string (n=abc for a number) is an error that says how
// to write it.
func coerceArgs(as []kvArg, schema json.RawMessage) error {
	types := schemaTypes(schema)
	for i, a := range as {
		want, ok := types[a.key]
		if !ok {
			continue
		}
		kind := jsonKindOf(a.json)
		switch {
		case allows(want, kind):
		case a.guessed && allows(want, "string"):
			as[i].json, as[i].guessed = jsonString(a.text), false
		case a.plain:
			return fmt.Errorf("argument %s=%s: the tool's input schema says %s is %s, not a string; write it as JSON (like %s=%s), or pass the object with --args",
				a.key, a.text, a.key, typeText(want), a.key, example(want))
		}
	}
	return nil
}

// needsSchema reports whether some KEY=VALUE value was guessed at: only
// then is the tool's schema looked up.
func needsSchema(as []kvArg) bool {
	for _, a := range as {
		if a.guessed || a.plain {
			return true
		}
	}
	return false
}

// toolSchema is the capability's input schema from the live listing or
// the recorded catalog; without either, a trusted server is listed once
// (as 'sluice refresh SERVER' would). nil when it cannot be had: the call
// then goes as typed and reports its own errors.
func toolSchema(ctx context.Context, g *gateway.Gateway, capName string) json.RawMessage {
	d, err := g.Describe(ctx, capName)
	if gateway.KindOf(err) == gateway.KindMissing {
		if server, _, ok := gateway.SplitCapability(capName); ok {
			if _, ferr := g.Find(ctx, gateway.FindRequest{Server: server, Refresh: true, Limit: 1}); ferr == nil {
				d, err = g.Describe(ctx, capName)
			}
		}
	}
	if err != nil {
		return nil
	}
	return d.InputSchema
}

func typeText(types []string) string {
	if len(types) == 1 {
		return "a " + types[0]
	}
	return "one of " + strings.Join(types, ", ")
}

func example(types []string) string {
	switch types[0] {
	case "integer":
		return "42"
	case "number":
		return "1.5"
	case "boolean":
		return "true"
	case "array":
		return `'["x"]'`
	case "object":
		return `'{"a":1}'`
	}
	return "null"
}

func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// askApproval asks on stderr and reads y/N from stdin, bounded by
// approvalWait and ctx.
func askApproval(ctx context.Context, e *env, r gateway.ApprovalRequest) (bool, error) {
	args := pretty(r.Arguments, "    ")
	if len(args) > 2000 {
		args = args[:2000] + "…"
	}
	// The capability and reason carry names a server chose: escaped like
	// every prompt (see clean).
	fmt.Fprintf(e.stderr, "sluice call: %s needs approval: %s\n  arguments: %s\nApprove this call? [y/N] ", cleanLine(r.Capability), clean(r.Reason), clean(args))
	answer := make(chan bool, 1)
	go func() { answer <- readYes(e.stdin) }()
	t := time.NewTimer(approvalWait)
	defer t.Stop()
	select {
	case yes := <-answer:
		return yes, nil
	case <-t.C:
		fmt.Fprintln(e.stderr)
		return false, fmt.Errorf("no answer within %s", approvalWait)
	case <-ctx.Done():
		fmt.Fprintln(e.stderr)
		return false, ctx.Err()
	}
}

func progressLine(p json.RawMessage) string {
	var pr struct {
		Progress json.RawMessage `json:"progress"`
		Total    json.RawMessage `json:"total"`
		Message  string          `json:"message"`
	}
	if json.Unmarshal(p, &pr) != nil {
		return "working…"
	}
	s := "progress " + string(pr.Progress)
	if len(pr.Total) > 0 {
		s += "/" + string(pr.Total)
	}
	if pr.Message != "" {
		s += " " + firstLineOf(pr.Message)
	}
	return s
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// content is one item of a CallToolResult's content.
type content struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Data     string          `json:"data"`
	MimeType string          `json:"mimeType"`
	URI      string          `json:"uri"`
	Name     string          `json:"name"`
	Title    string          `json:"title"`
	Size     json.RawMessage `json:"size"`
	Resource *struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"resource"`
}

// printResult renders a CallToolResult for a person. Metadata (types,
// mimeTypes, URIs, names) is always cleaned of control characters; text
// and structured content only when term is set (stdout is a terminal), so
// that piped output keeps the server's bytes exactly.
func printResult(w io.Writer, raw json.RawMessage, term bool) error {
	body := func(s string) string {
		if term {
			return clean(s)
		}
		return s
	}
	var r struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("the result is not a CallToolResult object: %v", err)
	}
	hasStructured := len(r.StructuredContent) > 0 && !bytes.Equal(bytes.TrimSpace(r.StructuredContent), []byte("null"))
	if hasStructured && len(r.Content) == 1 && sameJSONText(r.Content[0], r.StructuredContent) {
		// The usual pattern: the text block is the structured content
		// serialized. Print it once, pretty.
		fmt.Fprintln(w, body(pretty(r.StructuredContent, "")))
		return nil
	}
	for _, item := range r.Content {
		var c content
		if err := json.Unmarshal(item, &c); err != nil {
			fmt.Fprintf(w, "[content item that is not an object: %s]\n", clean(pretty(item, "")))
			continue
		}
		switch c.Type {
		case "text":
			fmt.Fprint(w, body(c.Text))
			if !strings.HasSuffix(c.Text, "\n") {
				fmt.Fprintln(w)
			}
		case "image", "audio":
			fmt.Fprintf(w, "[%s %s, %s]\n", c.Type, clean(orUnknown(c.MimeType)), sizeText(base64Len(c.Data)))
		case "resource":
			if c.Resource == nil {
				fmt.Fprintf(w, "[resource without contents]\n")
				continue
			}
			kind, n := "text", 0
			if c.Resource.Text != nil {
				n = len(*c.Resource.Text)
			} else if c.Resource.Blob != nil {
				kind, n = "blob", base64Len(*c.Resource.Blob)
			}
			fmt.Fprintf(w, "[resource %s %s, %s %s]\n", clean(c.Resource.URI), clean(orUnknown(c.Resource.MimeType)), kind, sizeText(n))
		case "resource_link":
			fmt.Fprintf(w, "[resource link] %s", clean(c.URI))
			if c.Name != "" {
				fmt.Fprintf(w, " (%s)", clean(c.Name))
			}
			if c.MimeType != "" {
				fmt.Fprintf(w, " %s", clean(c.MimeType))
			}
			if len(c.Size) > 0 {
				fmt.Fprintf(w, " size %s", clean(string(c.Size)))
			}
			fmt.Fprintln(w)
		default:
			fmt.Fprintf(w, "[%s content, %s of JSON]\n", clean(orUnknown(c.Type)), sizeText(len(item)))
		}
	}
	if hasStructured {
		if len(r.Content) > 0 {
			fmt.Fprintln(w, "structuredContent:")
		}
		fmt.Fprintln(w, body(pretty(r.StructuredContent, "")))
	}
	return nil
}

// sameJSONText reports whether a content item is a text block holding the
// same JSON as structured (ignoring whitespace).
func sameJSONText(item, structured json.RawMessage) bool {
	var c content
	if json.Unmarshal(item, &c) != nil || c.Type != "text" {
		return false
	}
	var a, b bytes.Buffer
	if json.Compact(&a, []byte(c.Text)) != nil || json.Compact(&b, structured) != nil {
		return false
	}
	return bytes.Equal(a.Bytes(), b.Bytes())
}

func orUnknown(s string) string {
	if s == "" {
		return "(no mimeType)"
	}
	return s
}

// base64Len is the decoded size of base64 text.
func base64Len(s string) int {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	return len(s) * 6 / 8
}

func sizeText(n int) string {
	switch {
	case n < 1024:
		return plural(n, "byte")
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/1024, n)
	default:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	}
}

// separatorSlip is the capability meant by name when it joins a declared
// server's id to the tool with something other than "__" (github.search,
// github_search, github/search), else "".
func separatorSlip(g *gateway.Gateway, name string) string {
	if strings.Contains(name, gateway.Sep) {
		return ""
	}
	best := ""
	for _, v := range g.Servers().Servers {
		for _, sep := range []string{".", "_", "/", ":", " "} {
			if rest, ok := strings.CutPrefix(name, v.ID+sep); ok && rest != "" && len(v.ID) > len(best) {
				best = v.ID
			}
		}
	}
	if best == "" {
		return ""
	}
	return best + gateway.Sep + name[len(best)+1:]
}
