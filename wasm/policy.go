package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Decision is what the caller should do with a result after a filter call.
type Decision struct {
	Data       []byte // the bytes to pass on (nil when Blocked)
	Blocked    bool   // withhold the result and show Reason instead
	Reason     string // model-safe text: names the filter, never guest internals
	FailedOpen bool   // the filter failed and the policy passed the input on
	Err        error  // the filter's error, for logs and metrics (nil on success)
}

// Decide applies the filter's OnError policy to the outcome of Run (or
// Apply): on success the output (or the block), on failure either the
// unfiltered input (fail-open) or a block (fail-closed). The host never
// decides this itself: Run returns typed errors and the caller calls Decide
// (or its own policy).
func (f *Filter) Decide(input []byte, out Output, err error) Decision {
	return DecideWith(f.name, f.onError, input, out, err)
}

// DecideWith is Decide for an explicit policy.
func DecideWith(name string, policy OnError, input []byte, out Output, err error) Decision {
	if err == nil {
		if out.Status == StatusBlocked {
			return Decision{Blocked: true, Reason: fmt.Sprintf("result withheld by filter %s: %s", name, out.Reason)}
		}
		return Decision{Data: out.Data}
	}
	if policy == FailOpen {
		return Decision{Data: input, FailedOpen: true, Err: err}
	}
	return Decision{Blocked: true, Reason: fmt.Sprintf("result withheld: filter %s failed and is fail-closed", name), Err: err}
}

// Apply runs the filter over a whole CallToolResult. In mode result-json it
// is one Run. In mode text it runs once per text content item (meta.Item is
// set to the item's index) and reassembles the result: the first failure or
// block ends the walk and is returned as is. Items keep their other fields;
// numbers keep their source text.
func (f *Filter) Apply(ctx context.Context, result []byte, meta Meta) (Output, error) {
	if f.mode == ModeResultJSON {
		return f.Run(ctx, result, meta)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(result, &top); err != nil {
		return Output{}, fmt.Errorf("wasm: Apply: result is not a JSON object: %w", err)
	}
	var items []json.RawMessage
	if raw, ok := top["content"]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			return Output{}, fmt.Errorf("wasm: Apply: result content is not an array: %w", err)
		}
	}
	changed := false
	for i, raw := range items {
		var item map[string]json.RawMessage
		if json.Unmarshal(raw, &item) != nil {
			continue
		}
		var typ, text string
		if json.Unmarshal(item["type"], &typ) != nil || typ != "text" || json.Unmarshal(item["text"], &text) != nil {
			continue
		}
		m := meta
		m.Item = i
		m.ValidInput = false // the input is the item's text, not JSON
		out, err := f.Run(ctx, []byte(text), m)
		if err != nil || out.Status == StatusBlocked {
			return out, err
		}
		if out.Status == StatusPass {
			continue
		}
		item["text"] = appendJSONString(nil, string(out.Data))
		out.Release() // copied
		if items[i], err = json.Marshal(item); err != nil {
			return Output{}, err
		}
		changed = true
	}
	if !changed {
		return Output{Data: result, Status: StatusPass}, nil
	}
	var err error
	if top["content"], err = json.Marshal(items); err != nil {
		return Output{}, err
	}
	data, err := json.Marshal(top)
	if err != nil {
		return Output{}, errors.New("wasm: Apply: re-encoding the result: " + err.Error())
	}
	return Output{Data: data, Status: StatusReplaced}, nil
}
