package gateway

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"sluice/wasm"
)

// Result paging limits.
const (
	// DefaultResultPage is the page size of ReadResult when length is 0:
	// the shape filter's default budget, so a page fits a model's context
	// like a shaped result does.
	DefaultResultPage = DefaultShapeBudget
	// MaxResultPage is the largest page ReadResult returns.
	MaxResultPage = wasm.MaxOffloadPage - 8
)

// ResultPage is one page of an offloaded result (the read_result op).
// Data holds the exact bytes of the page. Pages end on a UTF-8 character
// boundary, so text results page as valid text; a stored result that is not
// UTF-8 is sent base64-encoded in JSON (Encoding "base64").
type ResultPage struct {
	Handle   string // the handle read
	Offset   int64  // where Data starts in the stored result
	Length   int64  // bytes in Data
	Total    int64  // size of the stored result
	Data     string // the bytes
	EOF      bool   // Data reaches the end of the stored result
	Next     int64  // offset of the next page (== Total at EOF)
	Encoding string // "" (text) or "base64" in JSON
}

type resultPageJSON struct {
	Handle   string `json:"handle"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	Total    int64  `json:"total"`
	Data     string `json:"data"`
	Encoding string `json:"encoding,omitempty"`
	EOF      bool   `json:"eof"`
	Next     int64  `json:"next"`
}

// MarshalJSON encodes the page; data is text, or base64 when the bytes
// are not valid UTF-8.
func (p ResultPage) MarshalJSON() ([]byte, error) {
	j := resultPageJSON{Handle: p.Handle, Offset: p.Offset, Length: p.Length, Total: p.Total, Data: p.Data, EOF: p.EOF, Next: p.Next}
	if !utf8.ValidString(p.Data) {
		j.Data = base64.StdEncoding.EncodeToString([]byte(p.Data))
		j.Encoding = "base64"
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (p *ResultPage) UnmarshalJSON(b []byte) error {
	var j resultPageJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = ResultPage{Handle: j.Handle, Offset: j.Offset, Length: j.Length, Total: j.Total, Data: j.Data, EOF: j.EOF, Next: j.Next}
	if j.Encoding == "base64" {
		d, err := base64.StdEncoding.DecodeString(j.Data)
		if err != nil {
			return fmt.Errorf("result page: data: %w", err)
		}
		p.Data = string(d)
	} else if j.Encoding != "" {
		return fmt.Errorf("result page: unknown encoding %q", j.Encoding)
	}
	return nil
}

// sweepResults removes expired offloaded results and abandoned temp files.
func (g *Gateway) sweepResults() {
	if g.pipeline == nil {
		return
	}
	if err := g.pipeline.store.Sweep(); err != nil {
		g.log.Warn("sweeping the results store failed", "error", err.Error())
	}
}

// ReadResult returns a page of a result the shape filter (or another filter
// through offload_put) stored: length bytes (0 = DefaultResultPage, at most
// MaxResultPage) from offset. An offset inside a UTF-8 character starts at
// that character; a page never ends inside one unless the character alone
// is longer than length.
func (g *Gateway) ReadResult(handle string, offset, length int64) (*ResultPage, error) {
	p := g.pipeline
	if p == nil || p.store == nil {
		return nil, &Error{Kind: KindGateway, Message: "the results store is not open"}
	}
	if length <= 0 {
		length = DefaultResultPage
	}
	if length > MaxResultPage {
		length = MaxResultPage
	}
	if offset < 0 {
		return nil, &Error{Kind: KindBadInput, Message: fmt.Sprintf("offset %d is negative", offset), Remedy: fixText("pass an offset of 0 or more")}
	}
	// Read up to 3 bytes before offset (to find the start of a character
	// cut by offset) and 4 after the page (to finish one cut by its end).
	lo := max(0, offset-3)
	c, err := p.store.Get(handle, lo, length+(offset-lo)+4)
	if err != nil {
		return nil, resultErr(handle, offset, err)
	}
	if offset > c.Total || offset == c.Total && c.Total > 0 {
		return nil, resultErr(handle, offset, wasm.ErrOffsetOutOfRange)
	}
	d := c.Data
	start := int(offset - lo)
	if start > len(d) {
		start = len(d)
	}
	// Back up to the first byte of a valid character that offset cuts.
	for k := start - 1; k >= 0 && k >= start-3 && start < len(d); k-- {
		if utf8.RuneStart(d[k]) {
			if r, size := utf8.DecodeRune(d[k:]); (r != utf8.RuneError || size > 1) && k+size > start {
				start = k
			}
			break
		}
	}
	end := min(len(d), start+int(length))
	// End before a valid character the page would cut, or finish it when
	// it is the page's only character.
	if end < len(d) {
		for k := end - 1; k >= start && k >= end-3; k-- {
			if !utf8.RuneStart(d[k]) {
				continue
			}
			if r, size := utf8.DecodeRune(d[k:]); (r != utf8.RuneError || size > 1) && k+size > end {
				if k > start {
					end = k
				} else {
					end = k + size
				}
			}
			break
		}
	}
	page := &ResultPage{Handle: handle, Offset: lo + int64(start), Length: int64(end - start), Total: c.Total, Data: string(d[start:end])}
	page.Next = page.Offset + page.Length
	page.EOF = page.Next >= c.Total
	return page, nil
}

func resultErr(handle string, offset int64, err error) error {
	const again = "call the tool again for a fresh handle (stored results are kept for a limited time, 24 h by default)"
	switch {
	case errors.Is(err, wasm.ErrHandleInvalid):
		return &Error{Kind: KindBadInput, Message: fmt.Sprintf("%q is not a result handle (handles look like r- followed by 32 hex digits)", truncate(handle, 80)),
			Remedy: fixText("copy the handle from the result's marker"), Err: err}
	case errors.Is(err, wasm.ErrHandleExpired):
		return &Error{Kind: KindUnknown, Message: fmt.Sprintf("the stored result %s has expired and was removed", handle), Remedy: fixText(again), Err: err}
	case errors.Is(err, wasm.ErrHandleUnknown):
		return &Error{Kind: KindUnknown, Message: fmt.Sprintf("no stored result for handle %s (it expired, was evicted to stay under the quota, or was never stored here)", handle), Remedy: fixText(again), Err: err}
	case errors.Is(err, wasm.ErrOffsetOutOfRange):
		return &Error{Kind: KindBadInput, Message: fmt.Sprintf("offset %d is past the end of result %s", offset, handle), Remedy: fixText("read from an offset below the result's total size"), Err: err}
	}
	return &Error{Kind: KindGateway, Message: "reading stored result " + handle + ": " + err.Error(), Err: err}
}
