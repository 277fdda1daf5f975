package gateway

// This file is the result pipeline's failure policy: what a filter's
// failure or block turns into, and the model-safe text that names it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sluice/gateway/config"
	"sluice/wasm"
)

func interrupted(e *filterEntry, capability string, cerr error) error {
	return &Error{Kind: KindFilter, Capability: capability, Message: fmt.Sprintf("filter %s was interrupted (%v); the result was withheld", e.name, cerr), Err: cerr}
}

// decide applies e's onError to one filter outcome. wasm.DecideWith is the
// one failure policy (pass the output, withhold on a block, pass the input
// on when fail-open, withhold when fail-closed); this maps its decision onto
// the gateway's results and errors. blocked: the returned data replaces the
// result and no later filter runs.
func (p *pipeline) decide(e *filterEntry, capability string, data []byte, o wasm.Output, err error) ([]byte, bool, error) {
	policy := wasm.FailClosed
	if e.cfg.OnError == config.OnErrorOpen {
		policy = wasm.FailOpen
	}
	d := wasm.DecideWith(e.name, policy, data, o, err)
	switch {
	case d.Err == nil && d.Blocked:
		return blockedResult(e.name, o.Reason), true, nil
	case d.Err == nil:
		return d.Data, false, nil
	case d.FailedOpen:
		p.log.Warn("filter failed; passing the result on unfiltered (fail-open)", "filter", e.name, "capability", capability, "error", d.Err)
		return d.Data, false, nil
	}
	return nil, false, p.fail(e, capability, d.Err)
}

// fail is the error a fail-closed failure turns into. Its message is
// written for a model: it names the filter and the kind of failure, never
// the guest's own output (which could echo the result).
func (p *pipeline) fail(e *filterEntry, capability string, err error) error {
	p.log.Error("filter failed; result withheld (fail-closed)", "filter", e.name, "capability", capability, "error", err)
	return &Error{Kind: KindFilter, Capability: capability,
		Message: fmt.Sprintf("filter %s %s; the result was withheld (the filter is fail-closed)", e.name, failureText(err)),
		Remedy:  fixUser("run 'sluice filter list' for its status; reproduce with 'sluice filter test " + e.cfg.Module + " --input FILE'"),
		Err:     err}
}

// failureText describes a filter failure without guest-provided text.
func failureText(err error) string {
	var (
		trap  *wasm.TrapError
		tmo   *wasm.TimeoutError
		mem   *wasm.MemoryLimitError
		dis   *wasm.DisabledError
		rep   *wasm.ReportedError
		stat  *wasm.StatusError
		inv   *wasm.InvalidOutputError
		big   *wasm.OutputTooLargeError
		cfg   *wasm.ConfigError
		over  *wasm.OverrunError
		comp  *wasm.CompileError
		lim   *wasm.LimitError
		abi   *wasm.ABIVersionError
		imprt *wasm.ForbiddenImportError
	)
	switch {
	case errors.As(err, &dis):
		until := "until it is enabled again ('sluice filter enable')"
		if !dis.Until.IsZero() {
			until = "until " + dis.Until.UTC().Format(time.RFC3339) + " (its cool-down; other servers' results are filtered as usual)"
		}
		return fmt.Sprintf("is disabled for this server's results after %d consecutive failures, %s", dis.Failures, until)
	case errors.As(err, &over) && over.PerServer:
		return fmt.Sprintf("did not run: an earlier call on this server's results ran past its deadline and is still finishing (%d running); this server's results are withheld until it ends, other servers' are filtered as usual", over.Running)
	case errors.As(err, &over):
		return fmt.Sprintf("did not run: %d earlier calls ran past their deadlines and are still finishing; results are withheld until they end", over.Running)
	case errors.As(err, &trap):
		msg, _, _ := strings.Cut(trap.Message, "\n")
		return "trapped (" + truncate(msg, 200) + ")"
	case errors.As(err, &tmo) && tmo.Abandoned:
		return fmt.Sprintf("ran past its %v deadline; its result is dropped and this server's results are withheld until that call finishes", tmo.Timeout)
	case errors.As(err, &tmo):
		return fmt.Sprintf("ran past its %v deadline and was stopped", tmo.Timeout)
	case errors.As(err, &mem) && mem.Pages == 0:
		// At load: the module asks for more than the cap before it runs.
		return fmt.Sprintf("failed to load: its module declares more memory than the cap of %d pages (%d MiB); declare less initial memory in the module (its memory section)", mem.LimitPages, mem.LimitPages/16)
	case errors.As(err, &mem):
		return fmt.Sprintf("ran out of memory (cap %d pages)", mem.LimitPages)
	case errors.As(err, &rep):
		return "reported an error"
	case errors.As(err, &stat):
		return fmt.Sprintf("returned status %d, which the ABI does not define", stat.Status)
	case errors.As(err, &inv):
		return "produced invalid output (" + truncate(inv.Reason, 200) + ")"
	case errors.As(err, &big):
		return fmt.Sprintf("wrote more than %d bytes of output", big.Limit)
	case errors.As(err, &cfg):
		return "failed to load: it rejected its config"
	case errors.As(err, &lim):
		// Valid WebAssembly, maybe, but over a cap: say which and how to
		// fix it (the text is sluice's own: numbers, never module names).
		return "failed to load: its module was refused by a cap on filter modules: " + lim.Error()
	case errors.As(err, &comp):
		return "failed to load: the module is not valid WebAssembly"
	case errors.As(err, &abi):
		return "failed to load: it does not implement ABI mcpf v1"
	case errors.As(err, &imprt):
		return fmt.Sprintf("failed to load: it imports %s.%s, which is not allowed", imprt.Module, imprt.Name)
	case errors.Is(err, wasm.ErrInputTooLarge):
		return fmt.Sprintf("cannot take a result over %d bytes", wasm.DefaultMaxInputBytes)
	case errors.Is(err, wasm.ErrClosed), errors.Is(err, ErrClosed):
		return "is not available: the gateway is closing"
	}
	return "failed"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// blockedResult is what replaces a result a filter withheld on purpose.
func blockedResult(name, reason string) []byte {
	text := fmt.Sprintf("result withheld by filter %s: %s", name, reason)
	if reason == "" {
		text = "result withheld by filter " + name
	}
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": true})
	return b
}
