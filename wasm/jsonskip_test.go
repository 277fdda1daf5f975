package wasm

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// refScanString is scanJSONString one byte at a time: the reference the
// block version is checked against.
func refScanString(b []byte, i int) (int, bool) {
	clean := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '\\':
			if j+1 < len(b) && b[j+1] < 0x20 {
				clean = false
			}
			j++
		case c == '"':
			return j + 1, clean
		case c < 0x20:
			clean = false
		}
	}
	return -1, false
}

func checkScan(t *testing.T, b []byte, i int) {
	t.Helper()
	e, clean := scanJSONString(b, i)
	we, wclean := refScanString(b, i)
	if e != we || (e >= 0 && clean != wclean) {
		t.Fatalf("scanJSONString(%q, %d) = %d, %v; want %d, %v", b, i, e, clean, we, wclean)
	}
}

// TestScanJSONString: strings ending at every position of a block and
// across blocks, with runs of backslashes of every length up to 70
// straddling block edges, control bytes before and after the end.
func TestScanJSONString(t *testing.T) {
	for n := 0; n < 200; n++ {
		body := strings.Repeat("a", n)
		checkScan(t, []byte(`"`+body+`"`), 0)
		checkScan(t, []byte(`x"`+body+`"`+"\n,"), 1)
		checkScan(t, []byte(`"`+body), 0) // unterminated
		for run := 1; run <= 70; run++ {
			bs := strings.Repeat(`\`, run)
			checkScan(t, []byte(`"`+body+bs+`"`+body+`"`), 0)
			checkScan(t, []byte(`"`+body+bs+`"`), 0)
			checkScan(t, []byte(`"`+body+bs+"\n"+`"`), 0)
		}
		checkScan(t, []byte(`"`+body+"\t"+`"`), 0)
		checkScan(t, []byte(`"`+body+`"`+"\x01"), 0)
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'"', '\\', 'a', 'n', 'u', '\n', 0, 0xC3, 0xA9, ' '}
	for k := 0; k < 20000; k++ {
		b := make([]byte, 1+r.IntN(300))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		b[0] = '"'
		checkScan(t, b, 0)
	}
}

// TestMasks64: the assembly's masks are the Go reference's, for every byte
// value at every position.
func TestMasks64(t *testing.T) {
	var blk [64]byte
	for c := 0; c < 256; c++ {
		for k := range blk {
			blk[k] = 'a'
		}
		for k := 0; k < 64; k += 1 + k%5 {
			blk[k] = byte(c)
		}
		q, bs, ctl := masks64(&blk[0])
		wq, wbs, wctl := masks64Go(&blk)
		if q != wq || bs != wbs || ctl != wctl {
			t.Fatalf("byte %#x: masks64 = %x %x %x, want %x %x %x", c, q, bs, ctl, wq, wbs, wctl)
		}
	}
}

func FuzzScanJSONString(f *testing.F) {
	f.Add([]byte(`"abc"`))
	f.Add([]byte(`"a\"b\\\"c\\"`))
	f.Add(append(append([]byte(`"`), bytes.Repeat([]byte(`\`), 63)...), `""`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := 0; i < len(b) && i < 8; i++ {
			if b[i] == '"' {
				checkScan(t, b, i)
			}
		}
		if len(b) >= 64 {
			q, bs, c := masks64(&b[0])
			wq, wbs, wc := masks64Go((*[64]byte)(b[:64]))
			if q != wq || bs != wbs || c != wc {
				t.Fatalf("masks64(%q) = %x %x %x, want %x %x %x", b[:64], q, bs, c, wq, wbs, wc)
			}
		}
	})
}
