package front

import "strconv"

// numbersFit reports whether every number in v (valid JSON) decodes into
// a float64, as encoding/json needs when it decodes v into an any: a
// number beyond ±1.8e308 (1e999) is refused there. The SDK decodes _meta,
// and for a modern HTTP request the whole params, that way, so it refuses
// a request such a number is in; the fast paths decline it with this
// check, so the SDK answers it as it answers it without them.
func numbersFit(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			start, exp := i, false
			for ; i < len(v); i++ {
				d := v[i]
				if d == 'e' || d == 'E' {
					exp = true
				} else if !(d >= '0' && d <= '9' || d == '.' || d == '-' || d == '+') {
					break
				}
			}
			// Without an exponent only 309 digits or more can overflow.
			if exp || i-start > 300 {
				if _, err := strconv.ParseFloat(string(v[start:i]), 64); err != nil {
					return false
				}
			}
			i--
		}
	}
	return true
}
