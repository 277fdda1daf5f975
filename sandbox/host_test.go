package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// fakeHost is an in-memory Host with a few servers and tools. It counts
// calls in flight per server and remembers the peak.
type fakeHost struct {
	servers []Server
	latency time.Duration // for fs__slow
	maxConc map[string]int
	refuse  map[string]bool // capabilities refused by Admit and Call

	mu       sync.Mutex
	inflight map[string]int
	peak     map[string]int
	calls    []string
	admitted []string
}

func schemaJSON(s string) json.RawMessage { return json.RawMessage(s) }

func newFakeHost() *fakeHost {
	return &fakeHost{
		latency:  20 * time.Millisecond,
		maxConc:  map[string]int{"db": 1, "fs": 4},
		refuse:   map[string]bool{"fs__write": true},
		inflight: map[string]int{},
		peak:     map[string]int{},
		servers: []Server{
			{ID: "db", Tools: []Tool{
				{Name: "query", Description: "Run a read-only SQL query. Returns rows.",
					InputSchema:  schemaJSON(`{"type":"object","properties":{"sql":{"type":"string","description":"the query"},"limit":{"type":"integer","default":100},"mode":{"enum":["fast","exact"]}},"required":["sql"],"additionalProperties":false}`),
					OutputSchema: schemaJSON(`{"type":"object","properties":{"rows":{"type":"array"}}}`)},
				{Name: "echo", Description: "Echo the arguments as structured content.", InputSchema: schemaJSON(`{"type":"object"}`)},
			}},
			{ID: "fs", Tools: []Tool{
				{Name: "read_text_file", Description: "Read a file as text.",
					InputSchema: schemaJSON(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"path":{"type":"string"},"head":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["path"]}`)},
				{Name: "list", Description: "List two entries as two text items.", InputSchema: schemaJSON(`{"type":"object","properties":{}}`)},
				{Name: "image", Description: "Return an image.", InputSchema: schemaJSON(`{"type":"object"}`)},
				{Name: "fail", Description: "Always fails.", InputSchema: schemaJSON(`{"type":"object"}`)},
				{Name: "broken", Description: "Transport failure.", InputSchema: schemaJSON(`{"type":"object"}`)},
				{Name: "slow", Description: "Sleeps, then echoes n.", InputSchema: schemaJSON(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
				{Name: "big", Description: "Returns n bytes of text.", InputSchema: schemaJSON(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
				{Name: "write", Description: "Write a file (needs approval).", InputSchema: schemaJSON(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			}},
			{ID: "my-db", Tools: []Tool{{Name: "list-items"}, {Name: "def"}}},
			{ID: "my_db", Tools: []Tool{{Name: "x"}}},
			{ID: "json", Tools: []Tool{{Name: "t"}}},
		},
	}
}

func (h *fakeHost) Servers() []Server { return h.servers }

func (h *fakeHost) Admit(c string) error {
	h.mu.Lock()
	h.admitted = append(h.admitted, c)
	h.mu.Unlock()
	if h.refuse[c] {
		return Refused(c, "needs approval", "approve it with `sluice approve "+c+"`")
	}
	return nil
}

func (h *fakeHost) MaxConcurrency(server string) int { return h.maxConc[server] }

func text(s string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return b
}

func (h *fakeHost) Call(ctx context.Context, c string, args json.RawMessage) (CallResult, error) {
	server, tool, _ := SplitCapability(c)
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.inflight[server]++
	if h.inflight[server] > h.peak[server] {
		h.peak[server] = h.inflight[server]
	}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inflight[server]--
		h.mu.Unlock()
	}()
	if h.refuse[c] {
		return CallResult{}, Refused(c, "needs approval", "approve it")
	}
	var a map[string]json.RawMessage
	_ = json.Unmarshal(args, &a)
	switch c {
	case "db__query":
		var sql string
		_ = json.Unmarshal(a["sql"], &sql)
		return CallResult{Raw: json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"2 rows"}],"structuredContent":{"rows":[[1],[2]],"sql":%q}}`, sql))}, nil
	case "db__echo":
		return CallResult{Raw: json.RawMessage(`{"content":[],"structuredContent":` + string(args) + `}`)}, nil
	case "fs__read_text_file":
		var p string
		_ = json.Unmarshal(a["path"], &p)
		return CallResult{Raw: text("contents of " + p)}, nil
	case "fs__list":
		return CallResult{Raw: json.RawMessage(`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`)}, nil
	case "fs__image":
		return CallResult{Raw: json.RawMessage(`{"content":[{"type":"image","data":"AAA=","mimeType":"image/png"}]}`)}, nil
	case "fs__fail":
		return CallResult{Raw: json.RawMessage(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`)}, nil
	case "fs__broken":
		return CallResult{}, errors.New("server exited")
	case "fs__slow":
		select {
		case <-time.After(h.latency):
		case <-ctx.Done():
			return CallResult{}, ctx.Err()
		}
		return CallResult{Raw: json.RawMessage(`{"content":[],"structuredContent":{"n":` + string(a["n"]) + `}}`)}, nil
	case "fs__big":
		var n int
		_ = json.Unmarshal(a["n"], &n)
		return CallResult{Raw: text(strings.Repeat("x", n))}, nil
	}
	_ = tool
	return CallResult{Raw: text("ok")}, nil
}
