package front

import (
	"math/rand"
	"strings"
	"testing"
)

func TestAssignNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct {
		name     string
		refs     []upstreamRef
		noPrefix bool
		want     map[string]upstreamRef
	}{
		{"prefixed", []upstreamRef{{"fs", "read"}, {"git", "log"}}, false,
			map[string]upstreamRef{"fs__read": {"fs", "read"}, "git__log": {"git", "log"}}},
		{"no prefix unique", []upstreamRef{{"fs", "read"}, {"git", "log"}}, true,
			map[string]upstreamRef{"read": {"fs", "read"}, "log": {"git", "log"}}},
		{"no prefix collision keeps prefixes", []upstreamRef{{"a", "search"}, {"b", "search"}, {"b", "other"}}, true,
			map[string]upstreamRef{"a__search": {"a", "search"}, "b__search": {"b", "search"}, "other": {"b", "other"}}},
		{"bare name yields to a prefixed name", []upstreamRef{{"a", "b__c"}, {"b", "c"}, {"x", "c"}}, true,
			map[string]upstreamRef{"b__c": {"b", "c"}, "x__c": {"x", "c"}, "a__b__c": {"a", "b__c"}}},
		{"long name hashed", []upstreamRef{{"srv", long}}, false,
			map[string]upstreamRef{("srv__" + long)[:55] + "_" + hashSuffix("srv__"+long): {"srv", long}}},
		{"invalid characters replaced and hashed", []upstreamRef{{"srv", "do thing/now"}}, false,
			map[string]upstreamRef{"srv__do_thing_now_" + hashSuffix("srv__do thing/now"): {"srv", "do thing/now"}}},
		{"duplicates merged", []upstreamRef{{"fs", "read"}, {"fs", "read"}}, false,
			map[string]upstreamRef{"fs__read": {"fs", "read"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := assignNames(tc.refs, tc.noPrefix)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
			for k := range got {
				if len(k) > maxToolName || !validToolName(k) {
					t.Errorf("exposed name %q is invalid or longer than %d", k, maxToolName)
				}
			}
		})
	}
}

func hashSuffix(capability string) string { return hashed("", capability, 8)[1:] }

// TestAssignNamesDeterministic: the same refs in any order give the same
// names, and every ref gets exactly one unique name.
func TestAssignNamesDeterministic(t *testing.T) {
	var refs []upstreamRef
	for _, s := range []string{"a", "b", "c_long_server_id_0123456789"} {
		for _, n := range []string{"read", "write", strings.Repeat("n", 60), strings.Repeat("n", 61), "sp ace", "b__read"} {
			refs = append(refs, upstreamRef{s, n})
		}
	}
	for _, noPrefix := range []bool{false, true} {
		first := assignNames(refs, noPrefix)
		if len(first) != len(refs) {
			t.Fatalf("noPrefix=%v: %d names for %d refs", noPrefix, len(first), len(refs))
		}
		for i := 0; i < 20; i++ {
			shuffled := append([]upstreamRef(nil), refs...)
			rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			again := assignNames(shuffled, noPrefix)
			for k, v := range first {
				if again[k] != v {
					t.Fatalf("noPrefix=%v: order changed the mapping of %q: %v vs %v", noPrefix, k, v, again[k])
				}
			}
		}
	}
}

func FuzzAssignNames(f *testing.F) {
	f.Add("fs", "read", "fs", "read_file", true)
	f.Add("a", "b__c", "b", "c", true)
	f.Add("x", strings.Repeat("é", 40), "y", "", false)
	f.Fuzz(func(t *testing.T, s1, n1, s2, n2 string, noPrefix bool) {
		refs := []upstreamRef{{s1, n1}, {s2, n2}}
		got := assignNames(refs, noPrefix)
		seen := map[upstreamRef]bool{}
		for k, v := range got {
			if len(k) > maxToolName || !validToolName(k) {
				t.Fatalf("invalid exposed name %q", k)
			}
			if seen[v] {
				t.Fatalf("ref %v named twice", v)
			}
			seen[v] = true
		}
		want := 2
		if refs[0] == refs[1] {
			want = 1
		}
		if len(got) != want {
			t.Fatalf("got %d names for %v", len(got), refs)
		}
	})
}
