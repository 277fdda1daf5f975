package gateway

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "sluice"

// thirdParty maps each third-party module to the one package allowed to
// import it (architecture rule 4).
var thirdParty = map[string]string{
	"github.com/tetratelabs/wazero":          "wasm",
	"go.starlark.net":                        "sandbox",
	"gopkg.in/yaml.v3":                       "gateway/config",
	"golang.org/x/sys":                       "gateway/proc",
	"github.com/modelcontextprotocol/go-sdk": "gateway/front",
	"github.com/prometheus/client_golang":    "gateway/front",
	"golang.org/x/oauth2":                    "gateway/oauth",
}

// pkgImports returns, for every package directory under the module root, the
// set of import paths used by its non-test Go files.
func pkgImports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if out[rel] == nil {
			out[rel] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[rel][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func own(p string) (string, bool) {
	if p == module {
		return ".", true
	}
	if strings.HasPrefix(p, module+"/") {
		return strings.TrimPrefix(p, module+"/"), true
	}
	return "", false
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

func TestLayering(t *testing.T) {
	all := pkgImports(t, "..")
	if len(all) < 5 {
		t.Fatalf("found only %d packages; is the test running from gateway/?", len(all))
	}
	for pkg, imports := range all {
		for imp := range imports {
			if target, ok := own(imp); ok {
				switch {
				case pkg == "cmd/sluice-conformance-client" && target != "gateway/mcp" && target != "gateway/remote" && target != "gateway/oauth":
					t.Errorf("%s imports %s: the conformance client drives only mcp, remote and oauth", pkg, imp)
				case pkg == "cmd/sluice" && target != "gateway":
					t.Errorf("%s imports %s: cmd/sluice may import only gateway", pkg, imp)
				case under(pkg, "sandbox"):
					t.Errorf("%s imports %s: sandbox is a leaf", pkg, imp)
				case under(pkg, "wasm/filters") || pkg == "wasm/guest":
					if target != "wasm/guest" {
						t.Errorf("%s imports %s: filters may import only wasm/guest", pkg, imp)
					}
				case under(pkg, "wasm"):
					t.Errorf("%s imports %s: wasm is a leaf", pkg, imp)
				case strings.HasPrefix(pkg, "gateway/") && target == "gateway":
					t.Errorf("%s imports %s: no subpackage of gateway imports the root", pkg, imp)
				case (under(pkg, "gateway/trust") || under(pkg, "gateway/catalog")) && under(target, "gateway/config"):
					t.Errorf("%s imports %s: trust and catalog take plain values, not config types", pkg, imp)
				case pkg == "gateway/config" && target != "gateway/clitool" && target != "gateway/remote":
					t.Errorf("%s imports %s: config may import only gateway/clitool and gateway/remote (URL rules)", pkg, imp)
				case under(pkg, "gateway/clitool") && target != "gateway/proc":
					t.Errorf("%s imports %s: clitool may import only gateway/proc", pkg, imp)
				case strings.HasPrefix(pkg, "gateway/") && (target == "sandbox" || under(target, "wasm")):
					t.Errorf("%s imports %s: only the gateway root assembles sandbox and wasm", pkg, imp)
				}
				continue
			}
			for mod, owner := range thirdParty {
				if (imp == mod || strings.HasPrefix(imp, mod+"/")) && pkg != owner {
					t.Errorf("%s imports %s: module %s is confined to %s", pkg, imp, mod, owner)
				}
			}
		}
	}
}
