package gateway

// The dependency rules of the architecture, as one table. Every package of
// the module has a row naming the packages of ours and the third-party
// modules it may import (the standard library is always allowed); an
// import not in its row fails TestLayering, and so does a package without
// a row: adding a package means adding its row here, on purpose. Test
// files are not checked (tests may use fixtures from anywhere).

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "sluice"

// Third-party modules.
const (
	modWazero     = "github.com/tetratelabs/wazero"
	modStarlark   = "go.starlark.net"
	modYAML       = "gopkg.in/yaml.v3"
	modSys        = "golang.org/x/sys"
	modSDK        = "github.com/modelcontextprotocol/go-sdk"
	modPrometheus = "github.com/prometheus/client_golang"
	modOAuth2     = "golang.org/x/oauth2"
	modTOML       = "github.com/BurntSushi/toml"
	modOTel       = "go.opentelemetry.io/otel" // the API, the SDK and the OTLP exporter
)

// modules maps each third-party module to the packages that may use it
// (rule 4: one package each; the SDK serves agents in front and may dial
// remote servers in remote). A row naming a module must be one of these.
var modules = map[string][]string{
	modWazero:     {"wasm"},
	modStarlark:   {"sandbox"},
	modYAML:       {"gateway/config"},
	modSys:        {"gateway/proc"},
	modSDK:        {"gateway/front", "gateway/remote"},
	modPrometheus: {"gateway/front"},
	modOAuth2:     {"gateway/oauth"},
	modTOML:       {"gateway/clients"},
	modOTel:       {"gateway/trace"},
}

// layers is the allow-list: package (relative to the module root; a
// trailing "/*" matches every package below) -> what it may import. Rules
// it encodes: cmd/sluice uses only the gateway root; only the root
// assembles the others; sandbox and wasm are leaves; no subpackage imports
// the root; trust and catalog take plain values (no config); each
// third-party module stays in its package.
var layers = map[string][]string{
	"cmd/sluice":                    {"gateway"},
	"cmd/sluice-conformance-client": {"gateway/mcp", "gateway/remote", "gateway/oauth"},
	"gateway": {"gateway/config", "gateway/trust", "gateway/catalog", "gateway/mcp", "gateway/proc",
		"gateway/front", "gateway/internal/upstream", "gateway/clitool", "gateway/remote", "gateway/oauth",
		"gateway/admin", "gateway/clients", "gateway/internal/files", "gateway/internal/suggest", "gateway/internal/linediff", "gateway/internal/threads", "gateway/internal/urlmask", "gateway/trace", "sandbox", "wasm"},
	"gateway/internal/upstream":          {"gateway/mcp", "gateway/proc"},
	"gateway/internal/files":             {},
	"gateway/internal/rawio":             {},
	"gateway/internal/suggest":           {},
	"gateway/internal/linediff":          {},
	"gateway/internal/threads":           {},
	"gateway/internal/urlmask":           {},
	"gateway/config":                     {"gateway/clitool", "gateway/proc", "gateway/remote", "gateway/internal/files", "gateway/internal/suggest", "gateway/internal/linediff", modYAML},
	"gateway/trust":                      {"gateway/internal/files"},
	"gateway/catalog":                    {"gateway/internal/files", "gateway/proc"},
	"gateway/mcp":                        {"gateway/proc", "gateway/internal/rawio"},
	"gateway/mcp/mcptest":                {},
	"gateway/mcp/mcptest/cmd/mcpfixture": {"gateway/mcp/mcptest"},
	"gateway/proc":                       {modSys},
	"gateway/front":                      {"gateway/internal/rawio", modSDK, modPrometheus},
	"gateway/remote":                     {"gateway/mcp", "gateway/internal/urlmask", modSDK},
	"gateway/oauth":                      {"gateway/remote", "gateway/proc", "gateway/internal/files", modOAuth2},
	"gateway/clitool":                    {"gateway/proc"},
	"gateway/admin":                      {"gateway/internal/urlmask"},
	"gateway/clients":                    {"gateway/internal/files", "gateway/internal/suggest", "gateway/internal/linediff", modTOML},
	"gateway/trace":                      {modOTel},
	"sandbox":                            {modStarlark},
	"wasm":                               {modWazero},
	"wasm/guest":                         {},
	"wasm/filters/*":                     {"wasm/guest"},
}

// pkgImports returns, for every package directory under root, the import
// paths of its non-test Go files (all build tags: wasip1 guests too).
func pkgImports(root string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	err := walkPackages(root, func(rel, path string) error {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if out[rel] == nil {
			out[rel] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[rel][p] = true
		}
		return nil
	})
	return out, err
}

// walkPackages calls fn for every non-test Go file under root with its
// package directory relative to root.
func walkPackages(root string, fn func(rel, path string) error) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		return fn(filepath.ToSlash(rel), path)
	})
}

// row finds pkg's row.
func row(pkg string) ([]string, bool) {
	if r, ok := layers[pkg]; ok {
		return r, true
	}
	for k, r := range layers {
		if base, ok := strings.CutSuffix(k, "/*"); ok && strings.HasPrefix(pkg, base+"/") {
			return r, true
		}
	}
	return nil, false
}

// target names what an import is in the table's terms: one of our packages
// (relative path), a third-party module, or "" for the standard library.
func target(imp string) (name string, thirdParty bool) {
	if imp == module {
		return ".", false
	}
	if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
		return rest, false
	}
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") {
		return "", false // standard library
	}
	for mod := range modules {
		if imp == mod || strings.HasPrefix(imp, mod+"/") {
			return mod, true
		}
	}
	return imp, true // a module no row may name
}

// violations checks an import graph against the table.
func violations(all map[string]map[string]bool) []string {
	var out []string
	for pkg, imports := range all {
		allow, ok := row(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("package %s has no row in the layering table (add one naming what it may import)", pkg))
			continue
		}
		for imp := range imports {
			name, third := target(imp)
			if name == "" || slices.Contains(allow, name) {
				continue
			}
			what := "package"
			if third {
				what = "third-party module"
			}
			out = append(out, fmt.Sprintf("%s imports %s: %s %s is not in its row %q", pkg, imp, what, name, allow))
		}
	}
	sort.Strings(out)
	return out
}

// tableErrors checks the table itself: a module is allowed only in its
// owners' rows, and a row names only known packages and modules.
func tableErrors() []string {
	var out []string
	for pkg, allow := range layers {
		for _, a := range allow {
			if owners, ok := modules[a]; ok {
				if !slices.Contains(owners, pkg) {
					out = append(out, fmt.Sprintf("row %s allows module %s, which is confined to %v", pkg, a, owners))
				}
				continue
			}
			if strings.Contains(strings.SplitN(a, "/", 2)[0], ".") {
				out = append(out, fmt.Sprintf("row %s names module %s, which is not in the modules table", pkg, a))
				continue
			}
			if _, ok := row(a); !ok {
				out = append(out, fmt.Sprintf("row %s allows %s, which has no row of its own", pkg, a))
			}
			if a == "gateway" && pkg != "cmd/sluice" {
				out = append(out, fmt.Sprintf("row %s allows the gateway root; only cmd/sluice may import it", pkg))
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestLayering(t *testing.T) {
	all, err := pkgImports("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 {
		t.Fatalf("found only %d packages; is the test running from gateway/?", len(all))
	}
	for _, e := range tableErrors() {
		t.Error(e)
	}
	for _, v := range violations(all) {
		t.Error(v)
	}
}

// TestLayeringCatchesAPlantedImport proves the check can fail: a module
// tree with forbidden imports planted in real files is parsed and checked
// like the repository.
func TestLayeringCatchesAPlantedImport(t *testing.T) {
	root := t.TempDir()
	plant := func(dir, imp string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		src := "package p\n\nimport _ " + strconv.Quote(imp) + "\n"
		if err := os.WriteFile(filepath.Join(root, dir, "p.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plant("gateway/mcp", "sluice/gateway/config")  // mcp must not see config
	plant("gateway/catalog", "sluice/gateway/mcp") // catalog takes plain values
	plant("gateway/trust", "golang.org/x/sync/errgroup")
	plant("gateway/clitool", "sluice/gateway")       // no subpackage imports the root
	plant("gateway/newpkg", "strings")               // no row
	plant("sandbox", modWazero+"/api")               // a leaf, and wazero is wasm's
	plant("cmd/sluice", "sluice/gateway/proc")       // cmd uses the root only
	plant("gateway/proc", "sluice/gateway/proc/sub") // an unlisted package of ours
	plant("wasm/filters/shape", "sluice/wasm/guest") // allowed: must not be reported
	all, err := pkgImports(root)
	if err != nil {
		t.Fatal(err)
	}
	got := violations(all)
	for _, want := range []string{
		"gateway/mcp imports sluice/gateway/config",
		"gateway/catalog imports sluice/gateway/mcp",
		"gateway/trust imports golang.org/x/sync/errgroup",
		"gateway/clitool imports sluice/gateway:",
		"package gateway/newpkg has no row",
		"sandbox imports " + modWazero + "/api",
		"cmd/sluice imports sluice/gateway/proc",
		"gateway/proc imports sluice/gateway/proc/sub",
	} {
		found := false
		for _, v := range got {
			found = found || strings.HasPrefix(v, want)
		}
		if !found {
			t.Errorf("planted import not caught: %q\nreported: %q", want, got)
		}
	}
	if len(got) != 8 {
		t.Errorf("%d violations, want exactly the 8 planted ones: %q", len(got), got)
	}
}

// TestNoThirdPartyTypeInExportedAPI: a package that imports a third-party
// module keeps its types out of exported declarations (rule 4): no
// exported function, method of an exported type, exported type, field,
// variable or constant mentions one in its signature.
func TestNoThirdPartyTypeInExportedAPI(t *testing.T) {
	bad, err := exportedThirdParty("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

func TestExportedThirdPartyCheckCanFail(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "wasm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package wasm

import (
	wz "github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

type Host struct {
	rt  wz.Runtime // unexported field: fine
	Mod api.Module // exported field: leaks
}

func New() wz.Runtime { return nil }             // leaks
func (h *Host) Fn(f api.Function) error { return nil } // leaks
func (h *Host) ok() api.Module { return nil }    // unexported: fine
type hidden struct{ X api.Module }                // unexported type: fine
func Fine(n int) string { return "" }
`
	if err := os.WriteFile(filepath.Join(dir, "w.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bad, err := exportedThirdParty(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Host.Mod", "New", "Host.Fn"}
	if len(bad) != len(want) {
		t.Fatalf("reported %q, want exactly %v", bad, want)
	}
	for _, w := range want {
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, " "+w+" mentions") }) {
			t.Errorf("leak %s not reported: %q", w, bad)
		}
	}
}

// exportedThirdParty lists exported declarations under root whose types
// mention a third-party package.
func exportedThirdParty(root string) ([]string, error) {
	var bad []string
	err := walkPackages(root, func(rel, path string) error {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		names := map[string]string{} // local name -> third-party import path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if _, third := target(p); !third {
				continue
			}
			local := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			names[local] = p
		}
		if len(names) == 0 {
			return nil
		}
		report := func(what string, n ast.Node) {
			ast.Inspect(n, func(x ast.Node) bool {
				sel, ok := x.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && names[id.Name] != "" {
					bad = append(bad, fmt.Sprintf("%s: exported %s mentions %s.%s (%s)", rel, what, id.Name, sel.Sel.Name, names[id.Name]))
					return false
				}
				return true
			})
		}
		exportedRecv := func(fd *ast.FuncDecl) (string, bool) {
			if fd.Recv == nil || len(fd.Recv.List) == 0 {
				return "", true
			}
			t := fd.Recv.List[0].Type
			if s, ok := t.(*ast.StarExpr); ok {
				t = s.X
			}
			if ix, ok := t.(*ast.IndexExpr); ok {
				t = ix.X
			}
			id, ok := t.(*ast.Ident)
			if !ok {
				return "", false
			}
			return id.Name + ".", id.IsExported()
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				recv, ok := exportedRecv(d)
				if ok && d.Name.IsExported() {
					report(recv+d.Name.Name, d.Type)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						st, ok := s.Type.(*ast.StructType)
						if !ok {
							report(s.Name.Name, s.Type)
							continue
						}
						for _, fl := range st.Fields.List {
							exported := len(fl.Names) == 0 // embedded
							for _, n := range fl.Names {
								exported = exported || n.IsExported()
							}
							if exported {
								fname := "(embedded)"
								if len(fl.Names) > 0 {
									fname = fl.Names[0].Name
								}
								report(s.Name.Name+"."+fname, fl.Type)
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && s.Type != nil {
								report(n.Name, s.Type)
							}
						}
					}
				}
			}
		}
		return nil
	})
	sort.Strings(bad)
	return bad, err
}

// testOnlyModules are modules only tests use, each confined to the one
// test file named here (the sluice binary never contains them): chromedp
// drives Chromium for the dashboard's browser tests.
var testOnlyModules = map[string]string{
	"github.com/chromedp/": "cmd/sluice/browser_test.go",
}

// TestTestOnlyModulesStayInTheirFile checks every Go file, tests included:
// a test-only module imported anywhere but its one file fails.
func TestTestOnlyModulesStayInTheirFile(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		rel = filepath.ToSlash(rel)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			for prefix, file := range testOnlyModules {
				if strings.HasPrefix(p, prefix) {
					seen[prefix] = true
					if rel != file {
						t.Errorf("%s imports %s: that module is for %s only", rel, p, file)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for prefix, file := range testOnlyModules {
		if !seen[prefix] {
			t.Errorf("no file imports %s; remove its row (it was for %s)", prefix, file)
		}
	}
}
