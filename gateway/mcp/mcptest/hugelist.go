package mcptest

import (
	"fmt"
	"strings"
)

// HugeListingEntries is how many resources, resource templates and
// prompts ModeHugeListings lists of each kind.
const HugeListingEntries = 24

// HugeListingTitle and HugeListingDescription are the sizes of each
// listed entry's title and description in ModeHugeListings: each entry
// is over 32 KB, the whole of one listing over 750 KB.
const (
	HugeListingTitle       = 12 << 10
	HugeListingDescription = 20 << 10
)

// hugeText is n bytes of text for entry i: a readable head, multi-byte
// runes and characters JSON must escape (so a cut that ignores rune or
// escape boundaries shows), padded with "x".
func hugeText(kind string, i, n int) string {
	head := fmt.Sprintf("%s %02d: é€\"\\<\n ", kind, i)
	return head + strings.Repeat("x", n-len(head))
}

// hugeListing answers the listing methods of ModeHugeListings.
func hugeListing(method string) (map[string]any, bool) {
	var list []any
	for i := range HugeListingEntries {
		title := hugeText("title", i, HugeListingTitle)
		desc := hugeText("description", i, HugeListingDescription)
		switch method {
		case "resources/list":
			list = append(list, map[string]any{"uri": fmt.Sprintf("huge://resource/%02d", i), "name": fmt.Sprintf("resource-%02d", i),
				"title": title, "description": desc, "mimeType": "text/plain"})
		case "resources/templates/list":
			list = append(list, map[string]any{"uriTemplate": fmt.Sprintf("huge://template/%02d/{id}", i), "name": fmt.Sprintf("template-%02d", i),
				"title": title, "description": desc})
		case "prompts/list":
			list = append(list, map[string]any{"name": fmt.Sprintf("prompt_%02d", i), "title": title, "description": desc,
				"arguments": []any{map[string]any{"name": "topic", "required": true, "description": hugeText("argument", i, 4<<10)}}})
		default:
			return nil, false
		}
	}
	key := map[string]string{"resources/list": "resources", "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}[method]
	return map[string]any{key: list}, true
}
