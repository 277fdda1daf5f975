package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decodedIsError is what encoding/json makes of a result's isError:
// whether any member matched the field, and whether it is true.
func decodedIsError(raw []byte) (matched, isTrue bool) {
	var r struct {
		IsError json.RawMessage `json:"isError"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return false, false
	}
	return r.IsError != nil, bytes.Equal(bytes.TrimSpace(r.IsError), []byte("true"))
}

var isErrorCases = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	`{"content":[],"isError":true}`,
	`{"content":[],"isError":false}`,
	`{"content":[],"ISERROR":true}`,
	`{"content":[],"IsErRoR" : true}`,
	`{"content":[],"is\u0045rror":true}`,
	"{\"content\":[],\"i\u017ferror\":true}", // long s folds to s
	`{"content":[{"type":"text","text":"isError"}]}`,
	`{"content":[{"type":"text","text":"\"isError\":true"}]}`,
	`{"content":[{"isError":true}]}`,
	`{"isErrors":true}`,
	`{"xisError":true}`,
	`{"isError":null}`,
	`{"isError": true }`,
	`{}`,
	`{"isError":true,"isError":false}`,
	`{"isError":false,"ISERROR":true}`,
	`{"IsError":true,"isError":false}`,
	` { "isError" :true } `,
	`{"a":{"isError":true},"isError":false}`,
	`{"a":{"isError":false},"isError":true}`,
	`{"a":"\"isError\":true","b":[{"isError":true}]}`,
	`{"a":"x\\","isError":true}`,
	`{"is\"Error":true}`,
	`{"isError":"true"}`,
	`{"isError":[true]}`,
	`{"content":[{"type":"text","text":"{\"isError\":true}"}],"isError":false}`,
}

// isErrorResult agrees with encoding/json, and mayHoldKey never says no
// where encoding/json finds the field.
func TestIsErrorResultAgreesWithDecoding(t *testing.T) {
	for _, c := range isErrorCases {
		matched, want := decodedIsError([]byte(c))
		if got := isErrorResult(json.RawMessage(c)); got != want {
			t.Errorf("isErrorResult(%s) = %v, decoding says %v", c, got, want)
		}
		if matched && !mayHoldKey([]byte(c), "iserror") {
			t.Errorf("mayHoldKey(%s) = false, but decoding matched the field", c)
		}
	}
}

func FuzzIsErrorResult(f *testing.F) {
	for _, c := range isErrorCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // results reach the gateway validated by the client
		}
		matched, want := decodedIsError(raw)
		if got := isErrorResult(raw); got != want {
			t.Fatalf("isErrorResult(%q) = %v, decoding says %v", raw, got, want)
		}
		if matched && !mayHoldKey(raw, "iserror") {
			t.Fatalf("mayHoldKey(%q) = false, but decoding matched the field", raw)
		}
	})
}
