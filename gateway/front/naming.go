package front

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// maxToolName is the longest exposed flat-mode name. The protocol allows
// 128 characters, but several agent clients reject names over 64.
const maxToolName = 64

// upstreamRef identifies one upstream item: the server and its own name.
type upstreamRef struct {
	Server string
	Name   string
}

func (r upstreamRef) capability() string { return r.Server + "__" + r.Name }

// assignNames maps every upstream ref to a unique exposed name, the same
// way for the same input regardless of its order:
//
//   - "<server>__<name>", with characters outside [A-Za-z0-9_.-] replaced
//     by "_";
//   - with noPrefix, the bare upstream name when exactly one server uses it
//     and it is already valid and short enough;
//   - a name that is too long, was altered, or collides is cut and given a
//     hash suffix "_<8 hex of sha256(capability)>", which keeps it stable
//     across runs and unique in practice.
//
// Duplicate refs are merged. The result maps exposed name -> ref.
func assignNames(refs []upstreamRef, noPrefix bool) map[string]upstreamRef {
	return assignNamesReserved(refs, noPrefix, nil)
}

// assignNamesReserved is assignNames with names no upstream ref may take
// (the gateway's own flat-mode tools): a ref that would get one is placed
// as on a collision, under a hashed variant.
func assignNamesReserved(refs []upstreamRef, noPrefix bool, reserved []string) map[string]upstreamRef {
	uniq := map[upstreamRef]bool{}
	var sorted []upstreamRef
	for _, r := range refs {
		if !uniq[r] {
			uniq[r] = true
			sorted = append(sorted, r)
		}
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Server != sorted[j].Server {
			return sorted[i].Server < sorted[j].Server
		}
		return sorted[i].Name < sorted[j].Name
	})
	users := map[string]int{}
	for _, r := range sorted {
		users[r.Name]++
	}
	out := make(map[string]upstreamRef, len(sorted)+len(reserved))
	for _, n := range reserved {
		out[n] = upstreamRef{}
	}
	var bare []upstreamRef
	// Prefixed names first, so a bare name can never take a prefixed
	// name's place; bare names yield on collision.
	for _, r := range sorted {
		if noPrefix && users[r.Name] == 1 && validToolName(r.Name) && len(r.Name) <= maxToolName {
			bare = append(bare, r)
			continue
		}
		place(out, prefixedName(r), r)
	}
	for _, r := range bare {
		if _, taken := out[r.Name]; taken {
			place(out, prefixedName(r), r)
			continue
		}
		out[r.Name] = r
	}
	for _, n := range reserved {
		delete(out, n)
	}
	return out
}

// place stores r under name, or under a hashed variant if name is taken.
func place(out map[string]upstreamRef, name string, r upstreamRef) {
	if _, taken := out[name]; !taken {
		out[name] = r
		return
	}
	for n := 8; n <= 64; n += 8 {
		alt := hashed(name, r.capability(), n)
		if _, taken := out[alt]; !taken {
			out[alt] = r
			return
		}
	}
	// 256 bits of sha256 collided with distinct capabilities: unreachable
	// in practice; keep the first holder.
}

func prefixedName(r upstreamRef) string {
	full := r.capability()
	clean := sanitizeName(full)
	if clean == full && len(clean) <= maxToolName {
		return clean
	}
	return hashed(clean, full, 8)
}

// hashed cuts name so that name + "_" + n hex digits of sha256(key) fits
// maxToolName.
func hashed(name, key string, n int) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])[:n]
	keep := maxToolName - 1 - n
	if len(name) > keep {
		name = name[:keep]
	}
	return name + "_" + h
}

func sanitizeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if validToolRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func validToolName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !validToolRune(r) {
			return false
		}
	}
	return true
}

func validToolRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
}
