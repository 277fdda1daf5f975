//go:build wasip1

// Command redact is the built-in result-stage filter (input mode
// result-json): it masks common secrets in text items, embedded resource
// text and string values of structuredContent. Config:
// {"patterns": ["extra regexp", ...], "disable": ["rule-name", ...]}.
// See guest.Redactor.
package main

import "sluice/wasm/guest"

var redactor *guest.Redactor

func init() {
	guest.RegisterInit(configure)
	guest.Register(filter)
}

func configure(config []byte) error {
	r, err := guest.NewRedactor(config)
	if err != nil {
		return err
	}
	r.Skip = guest.InputSkip // values: the host's native skip
	r.Find = guest.InputFind // anchors: the host's native keyword search
	redactor = r
	return nil
}

func filter(in guest.Input) guest.Output {
	out, changed, err := redactor.RedactResult(in.Data)
	if err != nil {
		return guest.Fail(err)
	}
	if !changed {
		return guest.Pass()
	}
	return guest.Replace(out)
}

func main() {}
