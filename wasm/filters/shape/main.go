//go:build wasip1

// Command shape is the built-in context-stage filter (input mode
// result-json): it keeps the model-facing MCP result within a byte budget
// (config {"budgetBytes": N}, default 16384) and offloads the full result
// through the host's offload_put import. See guest.Shaper.
package main

import (
	"errors"

	"sluice/wasm/guest"
)

var shaper = &guest.Shaper{Offload: guest.Offload, Skip: guest.InputSkip}

func init() {
	guest.RegisterInit(configure)
	guest.Register(filter)
}

func configure(config []byte) error {
	shaper.Budget = guest.DefaultBudget
	if len(config) == 0 {
		return nil
	}
	if v, ok := guest.Lookup(config, "budgetBytes"); ok {
		n, ok := guest.ParseInt(v)
		if !ok || n < guest.MinBudget || n > 1<<30 {
			return errors.New("shape: budgetBytes must be an integer between 1024 and 1073741824")
		}
		shaper.Budget = int(n)
	}
	return nil
}

func filter(in guest.Input) guest.Output {
	// The kept runs of the input (a cut text, items kept whole) are copied
	// by the host (output_input), not by the guest.
	data, parts, shaped, err := shaper.ShapeParts(in.Data)
	if err != nil {
		return guest.Fail(err)
	}
	if !shaped {
		return guest.Pass()
	}
	return guest.ReplaceParts(data, parts)
}

func main() {}
