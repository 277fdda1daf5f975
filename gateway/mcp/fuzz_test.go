package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":"x","method":"roots/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.25}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":[1e400]}}`,
	`{"jsonrpc":"2.0","id":1,"\u0069d":2,"result":{}}`,
	`[{"jsonrpc":"2.0","id":1,"result":{}}]`,
	`{"a":"\ud800\udc00 é \u00e9 \" \\ \/ \b\f\n\r\t"}`,
	"Starting server...",
	"\xff\xfe",
	"{\"s\":\"\xed\xa0\x80\"}",
	`-0.0e+10`,
	`{"n":[true,false,null,{},[],"",0,-1,1.5E3]}`,
	" \t{ } ",
	strings.Repeat("[", 50) + strings.Repeat("]", 50),
}

// FuzzClassify checks Classify never panics, that accepted messages are
// valid JSON and UTF-8 with consistent parts, and that the validating
// scanner agrees with encoding/json on well-formedness.
func FuzzClassify(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Classify(line)
		if err == nil {
			if !utf8.Valid(line) || !json.Valid(line) {
				t.Fatalf("accepted invalid line %q", line)
			}
			switch m.Kind {
			case KindRequest, KindNotification:
				if m.Method == "" && !bytes.Contains(line, []byte(`"method"`)) && !bytes.Contains(line, []byte(`\u`)) {
					t.Fatalf("method-less %v", m.Kind)
				}
			case KindResponse:
				if !json.Valid(m.Result) {
					t.Fatalf("result %q", m.Result)
				}
			case KindError:
				if m.Error == nil {
					t.Fatal("error kind without error")
				}
			default:
				t.Fatalf("kind %v", m.Kind)
			}
			for _, part := range [][]byte{m.ID, m.Params} {
				if part != nil && !json.Valid(part) {
					t.Fatalf("part %q", part)
				}
			}
		} else if CodeOf(err) != CodeProtocol {
			t.Fatalf("error without protocol code: %v", err)
		}
		if errors.Is(err, ErrNoise) && !utf8.Valid(line) {
			t.Fatalf("invalid UTF-8 classified as noise: %q", line)
		}
		// Differential check of the scanner against encoding/json.
		s := scanner{b: line}
		s.ws()
		_, serr := s.value()
		ours := serr == nil && s.end()
		if utf8.Valid(line) && bytes.Count(line, []byte("[")) < maxDepth/2 && bytes.Count(line, []byte("{")) < maxDepth/2 {
			if theirs := json.Valid(line); ours != theirs {
				t.Fatalf("scanner says %v, encoding/json says %v for %q", ours, theirs, line)
			}
		}
		if ours && !utf8.Valid(line) {
			t.Fatalf("scanner accepted invalid UTF-8 %q", line)
		}
	})
}

// chunkReader serves its data in chunks of a fixed size.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// FuzzFramer feeds arbitrary bytes in arbitrary chunk sizes through a small
// cap and compares the lines with a reference splitter.
func FuzzFramer(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s+"\n"+s+"\r\n\n"), uint8(3), uint8(40))
	}
	f.Add([]byte(strings.Repeat("a", 100)), uint8(1), uint8(10))
	f.Add([]byte("x\r\r\ny\n \t\n"), uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk, capLen uint8) {
		max := int(capLen) + 1
		fr := NewFramer(&chunkReader{data: data, n: int(chunk) + 1}, max)

		// Reference: split on '\n', strip one '\r', skip blank lines.
		var want [][]byte
		var wantErr error = io.EOF
		rest := data
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				line := rest
				if n := len(line); n > 0 && line[n-1] == '\r' {
					line = line[:n-1]
				}
				if len(line) > max {
					// The cap holds for blank runs too: a flood is a flood.
					wantErr = ErrLineTooLong
				} else if !blank(line) {
					wantErr = io.ErrUnexpectedEOF
				}
				break
			}
			line := rest[:i]
			rest = rest[i+1:]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if len(line) > max {
				wantErr = ErrLineTooLong
				break
			}
			if !blank(line) {
				want = append(want, line)
			}
		}

		for i := 0; ; i++ {
			line, err := fr.ReadLine()
			if fr.Buffered() > max+framerChunk {
				t.Fatalf("buffer %d over cap+chunk", fr.Buffered())
			}
			if err != nil {
				if i != len(want) {
					t.Fatalf("got %d lines then %v, want %d lines", i, err, len(want))
				}
				if !errors.Is(err, wantErr) {
					t.Fatalf("err %v, want %v", err, wantErr)
				}
				return
			}
			if i >= len(want) || !bytes.Equal(line, want[i]) {
				t.Fatalf("line %d = %q, want %q", i, line, want)
			}
			if _, err := Classify(line); err == nil && !json.Valid(line) {
				t.Fatalf("classified invalid JSON %q", line)
			}
		}
	})
}
