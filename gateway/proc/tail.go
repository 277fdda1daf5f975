package proc

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte // ring storage, len == max once full
	pos int    // next write position when full
	n   int64  // total bytes ever written
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.n += int64(n)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		t.pos = 0
		return n, nil
	}
	if len(t.buf) < t.max {
		room := t.max - len(t.buf)
		if len(p) <= room {
			t.buf = append(t.buf, p...)
			return n, nil
		}
		t.buf = append(t.buf, p[:room]...)
		p = p[room:]
		t.pos = 0
	}
	for len(p) > 0 {
		c := copy(t.buf[t.pos:], p)
		p = p[c:]
		t.pos = (t.pos + c) % t.max
	}
	return n, nil
}

// String returns the kept bytes as valid UTF-8, at most max bytes plus a
// leading "…" that marks discarded earlier output. A sequence cut at the
// front is dropped and invalid bytes become U+FFFD.
func (t *tail) String() string {
	t.mu.Lock()
	var b []byte
	if len(t.buf) < t.max {
		b = append(b, t.buf...)
	} else {
		b = append(b, t.buf[t.pos:]...)
		b = append(b, t.buf[:t.pos]...)
	}
	truncated := t.n > int64(len(b))
	t.mu.Unlock()
	if truncated {
		// Skip continuation bytes of a rune cut in half (at most 3).
		for i := 0; i < 3 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	// Replacements can make the text longer than the bound; keep the end.
	for len(s) > t.max {
		_, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		truncated = true
	}
	if truncated {
		s = "…" + s
	}
	return s
}
