package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileTools are an upstream's tools that would each fill a model's
// context on their own: a 135 KB title, description, input schema,
// output schema, _meta, icons and annotations, beside one ordinary tool.
func hostileTools() []Item {
	big := strings.Repeat("é long text ", 135<<10/13)
	props := map[string]any{}
	for i := range 1000 {
		props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string", "description": strings.Repeat("x", 120)}
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	mk := func(name string, extra map[string]any) Item {
		m := map[string]any{"name": name, "description": "tool " + name, "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}
		for k, v := range extra {
			m[k] = v
		}
		raw, _ := json.Marshal(m)
		return Item{Server: "evil", Raw: raw}
	}
	return []Item{
		mk("title", map[string]any{"title": big}),
		mk("desc", map[string]any{"description": big}),
		mk("schema", map[string]any{"inputSchema": json.RawMessage(schema)}),
		mk("output", map[string]any{"outputSchema": json.RawMessage(schema)}),
		mk("meta", map[string]any{"_meta": map[string]any{"x": big}}),
		mk("icons", map[string]any{"icons": []any{map[string]any{"src": "data:image/png;base64," + strings.Repeat("A", 135<<10)}}}),
		mk("annotations", map[string]any{"annotations": map[string]any{"title": big}}),
		toolItem("ok", "plain", "An ordinary tool."),
	}
}

// TestFlatListingBoundsEachTool: every hostile field is cut down to the
// per-tool cap in the listing, the tool stays callable under its name,
// the ordinary tool is listed whole, and a shortened one says so and how
// to see it whole.
func TestFlatListingBoundsEachTool(t *testing.T) {
	for _, mode := range []Mode{ModeFlat, ModeGateway} {
		t.Run(string(mode), func(t *testing.T) {
			b := newFake()
			items := hostileTools()
			if mode == ModeGateway {
				for i := range items {
					items[i].Expose = true
				}
			}
			b.features.Expose = mode == ModeGateway
			b.setItems(KindTools, items...)
			b.call = func(_ context.Context, r CallRequest, _ Peer) (json.RawMessage, error) {
				return textResult("ran " + r.Capability), nil
			}
			s := connect(t, b, &Options{Mode: mode}, nil, "")
			res, err := s.cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			seen := 0
			for _, tool := range res.Tools {
				raw, _ := json.Marshal(tool)
				total += len(raw)
				if !strings.HasPrefix(tool.Name, "evil__") && tool.Name != "ok__plain" {
					continue
				}
				seen++
				// The SDK's re-encoding may differ by a few bytes.
				if len(raw) > DefaultMaxToolListingBytes+64 {
					t.Errorf("%s: %d bytes listed, cap %d", tool.Name, len(raw), DefaultMaxToolListingBytes)
				}
				if !utf8.ValidString(tool.Title) || !utf8.ValidString(tool.Description) {
					t.Errorf("%s: cut inside a rune", tool.Name)
				}
				if tool.Name == "ok__plain" {
					if tool.Description != "An ordinary tool." || strings.Contains(tool.Description, "shortened") {
						t.Errorf("ordinary tool changed: %q", tool.Description)
					}
					continue
				}
				whole := "sluice describe " + tool.Name
				if mode == ModeGateway {
					whole = `describe {"capabilities":["` + tool.Name + `"]}`
				}
				if !strings.Contains(tool.Description, "definition shortened") || !strings.Contains(tool.Description, whole) {
					t.Errorf("%s: description does not say it was shortened and how to see it whole (%s): %.300q", tool.Name, whole, tool.Description)
				}
				if got := s.call(t, tool.Name, map[string]any{"q": "x"}); resultText(got) != "ran "+tool.Name {
					t.Errorf("%s: not callable after shortening: %q", tool.Name, resultText(got))
				}
			}
			if seen != len(items) {
				t.Fatalf("listed %d of %d tools", seen, len(items))
			}
			if total > DefaultMaxListingBytes {
				t.Fatalf("listing %d bytes, cap %d", total, DefaultMaxListingBytes)
			}
		})
	}
}

// TestFlatListingBoundsTheWhole: many tools of a fair size each, together
// over MaxListingBytes, are shortened to one common size so the listing
// keeps to its cap; small tools stay whole; a configured cap applies.
func TestFlatListingBoundsTheWhole(t *testing.T) {
	b := newFake()
	var items []Item
	for i := range 100 {
		items = append(items, toolItem("many", fmt.Sprintf("t%03d", i), strings.Repeat("d", 3000)))
	}
	items = append(items, toolItem("small", "one", "Small."))
	b.setItems(KindTools, items...)
	const capAll = 64 << 10
	s := connect(t, b, &Options{Mode: ModeFlat, MaxListingBytes: capAll, MaxToolListingBytes: 4096}, nil, "")
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	total, listed := 0, 0
	for _, tool := range res.Tools {
		if tool.Name == flatReadResult {
			continue
		}
		listed++
		raw, _ := json.Marshal(tool)
		total += len(raw)
		if tool.Name == "small__one" && tool.Description != "Small." {
			t.Errorf("small tool shortened: %q", tool.Description)
		}
	}
	if listed != len(items) {
		t.Fatalf("listed %d tools, want %d", listed, len(items))
	}
	// Re-encoding may add a few bytes per tool.
	if total > capAll+len(items)*16 {
		t.Fatalf("listing %d bytes, cap %d", total, capAll)
	}
}

func TestListBudgets(t *testing.T) {
	for _, tc := range []struct {
		sizes          []int
		perTool, total int
		want           []int
	}{
		{[]int{100, 200}, 1000, 10000, []int{100, 200}},
		{[]int{100, 5000}, 1000, 10000, []int{100, 1000}},
		{[]int{100, 3000, 3000}, 8000, 4100, []int{100, 2000, 2000}},
		{[]int{600, 600, 600}, 8000, 100, []int{MinToolListingBytes, MinToolListingBytes, MinToolListingBytes}},
	} {
		if got := listBudgets(tc.sizes, tc.perTool, tc.total); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("listBudgets(%v, %d, %d) = %v, want %v", tc.sizes, tc.perTool, tc.total, got, tc.want)
		}
	}
}

func TestListingOptionsChecked(t *testing.T) {
	for _, o := range []Options{{MaxToolListingBytes: 100}, {MaxToolListingBytes: 4096, MaxListingBytes: 1024}} {
		if _, err := o.resolved(); err == nil || !strings.Contains(err.Error(), "Listing") {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
}

// TestFlatListingBoundsResourcesAndPrompts: resources, templates and
// prompts are upstream definitions too; a hostile upstream's 100 KiB
// descriptions (and a prompt's argument descriptions) are held to the same
// caps, while what identifies each entry (URI, template, argument names)
// stays whole and readable.
func TestFlatListingBoundsResourcesAndPrompts(t *testing.T) {
	b := newFake()
	big := strings.Repeat("ü hostile ", 100<<10/11)
	var res, tpl, prompts []Item
	for i := range 20 {
		res = append(res, Item{Server: "evil", Raw: mustJSON(map[string]any{"uri": fmt.Sprintf("test://r/%02d", i), "name": fmt.Sprintf("r%02d", i), "description": big, "_meta": map[string]any{"x": big}})})
		tpl = append(tpl, Item{Server: "evil", Raw: mustJSON(map[string]any{"uriTemplate": fmt.Sprintf("test://t%02d/{id}", i), "name": fmt.Sprintf("t%02d", i), "title": big, "description": big})})
		prompts = append(prompts, Item{Server: "evil", Raw: mustJSON(map[string]any{"name": fmt.Sprintf("p%02d", i), "description": big,
			"arguments": []any{map[string]any{"name": "who", "required": true, "description": big}}})})
	}
	b.setItems(KindResources, append(res, Item{Server: "evil", Raw: json.RawMessage(`{"uri":"test://small","name":"small","description":"Small."}`)})...)
	b.setItems(KindResourceTemplates, tpl...)
	b.setItems(KindPrompts, prompts...)
	b.readRes = func(_ context.Context, server string, params json.RawMessage, _ Peer) (json.RawMessage, error) {
		var p struct{ URI string }
		json.Unmarshal(params, &p)
		return json.RawMessage(fmt.Sprintf(`{"contents":[{"uri":%q,"text":"hello"}]}`, p.URI)), nil
	}
	s := connect(t, b, &Options{Mode: ModeFlat}, nil, "2025-11-25")
	ctx := context.Background()
	size := func(v any) int { raw, _ := json.Marshal(v); return len(raw) }
	limit := DefaultMaxListingBytes + 21*64 // re-encoding may add a few bytes per entry

	rl, err := s.cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 21 {
		t.Fatalf("resources: %d, %v", len(rl.Resources), err)
	}
	if n := size(rl.Resources); n > limit {
		t.Fatalf("resources/list carries %d bytes, cap %d", n, DefaultMaxListingBytes)
	}
	for i, r := range rl.Resources {
		if r.Name == "evil__small" {
			if r.Description != "Small." {
				t.Errorf("small resource shortened: %q", r.Description)
			}
			continue
		}
		if want := fmt.Sprintf("test://r/%02d", i); r.URI != want || !strings.Contains(r.Description, "[sluice: definition shortened") || !utf8.ValidString(r.Description) || r.Meta != nil {
			t.Fatalf("resource %d: uri %q meta %v description %.80q…", i, r.URI, r.Meta, r.Description)
		}
	}
	if got, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://r/07"}); err != nil || got.Contents[0].Text != "hello" {
		t.Fatalf("a shortened resource is not readable: %+v, %v", got, err)
	}

	rt, err := s.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(rt.ResourceTemplates) != 20 {
		t.Fatalf("templates: %d, %v", len(rt.ResourceTemplates), err)
	}
	if n := size(rt.ResourceTemplates); n > limit {
		t.Fatalf("resources/templates/list carries %d bytes, cap %d", n, DefaultMaxListingBytes)
	}
	for i, tp := range rt.ResourceTemplates {
		if want := fmt.Sprintf("test://t%02d/{id}", i); tp.URITemplate != want || len(tp.Title) > maxListedTitleBytes {
			t.Fatalf("template %d: %q, title %d bytes", i, tp.URITemplate, len(tp.Title))
		}
	}

	pl, err := s.cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 20 {
		t.Fatalf("prompts: %d, %v", len(pl.Prompts), err)
	}
	if n := size(pl.Prompts); n > limit {
		t.Fatalf("prompts/list carries %d bytes, cap %d", n, DefaultMaxListingBytes)
	}
	for _, p := range pl.Prompts {
		if len(p.Arguments) != 1 || p.Arguments[0].Name != "who" || !p.Arguments[0].Required || len(p.Arguments[0].Description) > 0 && len(p.Arguments[0].Description) > DefaultMaxToolListingBytes {
			t.Fatalf("prompt %s arguments: %+v", p.Name, p.Arguments)
		}
	}
}

// FuzzShortenDefinition: whatever an upstream lists, a shortened tool or
// entry is a JSON object that keeps every identifying member as it was,
// its strings are valid UTF-8 where the input's were, and it is within
// its budget unless only identifying members and the note are left.
func FuzzShortenDefinition(f *testing.F) {
	f.Add([]byte(`{"name":"t","title":"T","description":"d","inputSchema":{"type":"object"}}`), 600, false)
	f.Add([]byte(`{"uri":"test://a","name":"a","description":"`+strings.Repeat("é<&", 400)+`","_meta":{"x":1}}`), 512, true)
	f.Add([]byte(`{"name":"p","arguments":[{"name":"who","required":true,"description":"`+strings.Repeat("x", 3000)+`"}]}`), 700, true)
	f.Fuzz(func(t *testing.T, raw []byte, budget int, entry bool) {
		var in map[string]json.RawMessage
		if len(raw) > 1<<16 || json.Unmarshal(raw, &in) != nil || in == nil {
			return
		}
		budget = MinToolListingBytes + abs(budget)%(8<<10)
		var got json.RawMessage
		var cut bool
		if entry {
			got, cut = shortenEntry(raw, budget, "the whole entry: ask the server s directly")
		} else {
			got, cut = shortenTool(raw, budget, wholeDefinition("s__t", false))
		}
		if !cut {
			if len(raw) > budget || string(got) != string(raw) {
				t.Fatalf("not shortened: %d bytes, budget %d", len(raw), budget)
			}
			return
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("shortened definition is not a JSON object: %v\n%s", err, got)
		}
		keep := []string{"name"}
		if entry {
			keep = append(keep, "uri", "uriTemplate", "mimeType")
		}
		ident := 0
		for _, k := range keep {
			if v, ok := in[k]; ok {
				if string(compactJSON(t, out[k])) != string(compactJSON(t, v)) {
					t.Fatalf("%s changed: %s -> %s", k, v, out[k])
				}
				ident += len(v) + len(k) + 4
			}
		}
		if utf8.Valid(raw) && !utf8.Valid(got) {
			t.Fatalf("shortening broke UTF-8: %q", got)
		}
		var desc string
		_ = json.Unmarshal(out["description"], &desc)
		if !strings.Contains(desc, "[sluice: definition shortened") {
			t.Fatalf("the shortened definition does not say so: %q", desc)
		}
		// Over the budget only when what identifies it cannot be given up.
		if len(got) > budget+64 && len(got) > ident+len(desc)+len(`{"description":""}`)+64+2*len(out["arguments"])+len(out["inputSchema"]) {
			t.Fatalf("shortened to %d bytes, budget %d, identifying members %d:\n%.400s", len(got), budget, ident, got)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}

func compactJSON(t *testing.T, v json.RawMessage) []byte {
	t.Helper()
	var b bytes.Buffer
	if len(v) == 0 {
		return nil
	}
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("compact %s: %v", v, err)
	}
	return b.Bytes()
}

// TestFlatListingLeavesOutOversizedIdentity: an entry whose identifying
// members alone (a 20 KiB URI, URI template, or a prompt's thousand
// argument names) are over the per-entry cap cannot be shortened to fit;
// it is left out of the listing, said in a warning, and the other entries
// are listed as before.
func TestFlatListingLeavesOutOversizedIdentity(t *testing.T) {
	b := newFake()
	huge := "test://r/" + strings.Repeat("x", 20<<10)
	var args []any
	for i := range 1000 {
		args = append(args, map[string]any{"name": fmt.Sprintf("argument-%04d-%s", i, strings.Repeat("y", 16)), "required": true})
	}
	b.setItems(KindResources,
		Item{Server: "evil", Raw: mustJSON(map[string]any{"uri": huge, "name": "huge"})},
		Item{Server: "evil", Raw: json.RawMessage(`{"uri":"test://small","name":"small"}`)})
	b.setItems(KindResourceTemplates,
		Item{Server: "evil", Raw: mustJSON(map[string]any{"uriTemplate": huge + "/{id}", "name": "huge"})},
		Item{Server: "evil", Raw: json.RawMessage(`{"uriTemplate":"test://t/{id}","name":"small"}`)})
	b.setItems(KindPrompts,
		Item{Server: "evil", Raw: mustJSON(map[string]any{"name": "many", "arguments": args})},
		Item{Server: "evil", Raw: json.RawMessage(`{"name":"small"}`)})
	var logs syncBuffer
	s := connect(t, b, &Options{Mode: ModeFlat, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, nil, "2025-11-25")
	ctx := context.Background()

	rl, err := s.cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "test://small" {
		t.Fatalf("resources: %+v, %v", rl, err)
	}
	rt, err := s.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(rt.ResourceTemplates) != 1 || rt.ResourceTemplates[0].URITemplate != "test://t/{id}" {
		t.Fatalf("templates: %+v, %v", rt, err)
	}
	pl, err := s.cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "evil__small" {
		t.Fatalf("prompts: %+v, %v", pl, err)
	}
	got := string(logs.Bytes())
	if n := strings.Count(got, "listed entry left out: what identifies it alone is over the per-entry byte cap"); n != 3 {
		t.Errorf("%d warnings for 3 entries left out:\n%s", n, got)
	}
	if strings.Contains(got, strings.Repeat("x", 100)) {
		t.Errorf("the warning carries the whole oversized URI:\n%.2000s", got)
	}
}
