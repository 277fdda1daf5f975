package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"

	"sluice/sandbox"
)

// notesHost serves one server, "notes", with one tool.
type notesHost struct{}

func (notesHost) Servers() []sandbox.Server {
	return []sandbox.Server{{ID: "notes", Tools: []sandbox.Tool{{
		Name:        "search",
		Description: "Search notes by text. Returns matching titles.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"]}`),
	}}}}
}
func (notesHost) Admit(string) error        { return nil }
func (notesHost) MaxConcurrency(string) int { return 4 }
func (notesHost) Call(_ context.Context, capability string, args json.RawMessage) (sandbox.CallResult, error) {
	return sandbox.CallResult{Raw: json.RawMessage(`{"content":[{"type":"text","text":"groceries"},{"type":"text","text":"gifts"}]}`)}, nil
}

func ExampleRun() {
	src := `
titles = notes.search(q="g", limit=10)
print("found", len(titles))
result = {"first": sorted(titles)[0], "n": len(titles)}
`
	r := sandbox.Run(context.Background(), notesHost{}, "example.star", src, nil)
	fmt.Println(string(r.Result), r.Logs, len(r.Calls), r.Error == nil)
	// Output: {"first":"gifts","n":2} [found 2] 1 true
}

func ExampleRun_preflight() {
	r := sandbox.Run(context.Background(), notesHost{}, "typo.star", `r = notes.serch(q="x")`, nil)
	fmt.Println(r.Error.Kind, r.Error.Message)
	// Output: syntax server "notes" has no tool notes.serch (did you mean notes.search?)
}

func ExampleDocs() {
	fmt.Print(sandbox.Docs(notesHost{}.Servers()[0]))
	// Output:
	// # module notes: server "notes", 1 tool; call as notes.<tool>(name=value, ...)
	// def search(q: str, limit: int = None) -> Any:
	//     "Search notes by text."
}
