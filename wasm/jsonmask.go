package wasm

// masks64Go is masks64 in Go (the reference the assembly is tested
// against, and masks64 itself where there is no assembly).
func masks64Go(b *[64]byte) (quote, backslash, control uint64) {
	for k, c := range b {
		bit := uint64(1) << k
		switch {
		case c == '"':
			quote |= bit
		case c == '\\':
			backslash |= bit
		case c < 0x20:
			control |= bit
		}
	}
	return quote, backslash, control
}
