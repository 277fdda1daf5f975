package sandbox

import (
	"context"
	"testing"
)

// BenchmarkShaping: a script that pages through a tool's results and
// shapes them as code mode's scripts do (comprehensions with conditions,
// dict comprehensions, d[k] = v counts, group_by), and comprehensions
// and item assignments alone (per-element cost: ns/op / 100,000).
func BenchmarkShaping(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"typical", `
def work():
    out = []
    for page in range(20):
        r = t.echo(i=page)
        items = [{"id": page * 50 + j, "name": "item-%d" % j, "ok": j % 3 != 0, "tags": ["a", "b"] if j % 2 else ["c"]} for j in range(50)]
        good = [it for it in items if it["ok"]]
        by_id = {it["id"]: it["name"] for it in good}
        names = sorted([n for n in by_id.values()])
        counts = {}
        for it in items:
            for tg in it["tags"]:
                counts[tg] = counts.get(tg, 0) + 1
        groups = group_by(good, lambda it: it["tags"][0])
        out.append({"page": page, "r": r, "n": len(good), "first": names[0], "counts": counts, "groups": {k: len(v) for k, v in groups.items()}})
    return out
result = len(work())
`},
		{"list-comprehension-100k", "def work():\n    return [i for i in range(100000)]\nresult = len(work())\n"},
		{"list-comprehension-if-100k", "def work():\n    return [i for i in range(100000) if i != 7]\nresult = len(work())\n"},
		{"small-comprehensions-100k", "def work():\n    n = 0\n    for i in range(10000):\n        n += len([j for j in range(10)])\n    return n\nresult = work()\n"},
		{"dict-comprehension-100k", "def work():\n    return {i: i for i in range(100000)}\nresult = len(work())\n"},
		{"item-assignment-100k", "def work():\n    d = {}\n    for i in range(100000):\n        d[i] = i\n    return d\nresult = len(work())\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := Run(context.Background(), trivialHost{}, "shape.star", c.src, nil)
				if r.Error != nil {
					b.Fatal(r.Error)
				}
			}
		})
	}
}
