package clitool

import (
	"fmt"
	"path/filepath"
	"strings"
)

// span is where one value sits in a rendered element.
type span struct {
	p      *param
	at, to int
}

// Kinds of curl option whose value reads "@FILE" (curlOptionKind).
const (
	curlPlain = iota // no "@FILE" form: the general rule applies
	curlData         // "@FILE" or "name@FILE" anywhere in the value
	curlForm         // -F: "name=@FILE" and "name=<FILE" too
)

// atFile refuses a value that puts "@" where a program reading "@FILE"
// arguments (see readsResponseFiles) could take it for a file reference:
// at the start of the element, right after "=" or "," (gcc -Wl,@FILE,
// key=@FILE) or after a glued short option (-J@FILE, curl -d@FILE); for
// curl's data, form, header and write-out options any "@" in the value
// (curl reads "name@FILE" and "name=@FILE" too), and "<" for -F. The
// declaration's own literal "@" is its choice; allowDash on the input
// lets its values through. prev is the element rendered before this one.
func (r *renderer) atFile(elem, prev string, spans []span) error {
	if !r.t.atFiles {
		return nil
	}
	kind := curlPlain
	if r.t.curl {
		kind = curlOptionKind(elem, prev)
	}
	for _, s := range spans {
		if s.p.AllowDash {
			continue
		}
		for k := s.at; k < s.to; k++ {
			c := elem[k]
			switch {
			case c == '@' && (kind != curlPlain || fileRefAt(elem, k)):
				return r.atFileErr(s.p, "@", elem, k, kind)
			case c == '<' && kind == curlForm:
				return r.atFileErr(s.p, "<", elem, k, kind)
			}
		}
	}
	return nil
}

// fileRefAt reports whether an "@" at elem[k] can begin a file reference:
// it starts the element, follows "=" or ",", or follows a run of short
// options glued to their value ("-d", "-sd", "-J").
func fileRefAt(elem string, k int) bool {
	if k == 0 || elem[k-1] == '=' || elem[k-1] == ',' {
		return true
	}
	if k < 2 || elem[0] != '-' || elem[1] == '-' {
		return false
	}
	for i := 1; i < k; i++ {
		if c := elem[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func (r *renderer) atFileErr(p *param, what, elem string, k int, kind int) error {
	var where string
	switch {
	case kind != curlPlain:
		where = fmt.Sprintf("in the value of a %s option that reads \"@FILE\", \"name@FILE\" or \"name=<FILE\" as a file's contents", r.t.atProgram)
	case k == 0:
		where = fmt.Sprintf("at the start of an argument, where %s reads \"@FILE\" as a file's contents", r.t.atProgram)
	case elem[k-1] == '=' || elem[k-1] == ',':
		where = fmt.Sprintf("right after %q, where %s reads \"@FILE\" as a file's contents", elem[k-1:k], r.t.atProgram)
	default:
		where = fmt.Sprintf("right after a short option, where %s reads \"@FILE\" as a file's contents", r.t.atProgram)
	}
	return &ArgError{Tool: r.t.spec.Name, Arg: p.Name, Reason: ReasonAtFile,
		Msg: fmt.Sprintf("puts %q %s, so the value could make it read any file; values may not do that here "+
			"(the tool's declaration can allow it with allowDash: true on input %s)", what, where, p.Name)}
}

// curlOptionKind says whether elem is, or is glued to, the value of one of
// curl's options that read "@FILE": a short option cluster with one of
// them in it ("-d…", "-sF…"), or the element after such an option.
func curlOptionKind(elem, prev string) int {
	if k := shortCluster(elem); k != curlPlain {
		return k
	}
	if strings.HasPrefix(prev, "--") {
		if strings.HasPrefix(prev, "--expand-") {
			return curlData // --expand-data, --expand-header...: variables may read files
		}
		return curlLong[prev]
	}
	if len(prev) >= 2 && prev[0] == '-' {
		return curlShort[prev[len(prev)-1]]
	}
	return curlPlain
}

// shortCluster is the kind of the first @-reading short option in elem's
// leading "-abc" run, if elem starts with one.
func shortCluster(elem string) int {
	if len(elem) < 2 || elem[0] != '-' || elem[1] == '-' {
		return curlPlain
	}
	for i := 1; i < len(elem); i++ {
		c := elem[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			break
		}
		if k := curlShort[c]; k != curlPlain {
			return k
		}
	}
	return curlPlain
}

// curl's options whose values have an "@FILE" form.
var (
	curlShort = map[byte]int{'d': curlData, 'H': curlData, 'w': curlData, 'F': curlForm}
	curlLong  = map[string]int{
		"--data": curlData, "--data-ascii": curlData, "--data-binary": curlData, "--data-urlencode": curlData,
		"--json": curlData, "--header": curlData, "--proxy-header": curlData, "--write-out": curlData,
		"--url-query": curlData, "--variable": curlData, "--form": curlForm,
	}
)

// responseFilePrograms expand an "@FILE" argument into the file's text:
// GCC and binutils (libiberty's expandargv), LLVM, the JDK launcher and
// tools, the .NET, Rust, Swift, Haskell and CUDA compilers, 7-Zip's list
// files; and curl, whose data and form values read "@FILE". The list is
// best effort: a program missing from it is not protected.
var responseFilePrograms = map[string]bool{
	"gcc": true, "g++": true, "cc": true, "c++": true, "cpp": true, "gfortran": true, "gccgo": true, "gdc": true,
	"clang": true, "clang++": true, "clang-cl": true, "cl": true, "link": true, "lld": true, "ld": true, "ld.bfd": true,
	"ld.gold": true, "ld.lld": true, "lld-link": true, "wasm-ld": true, "ld64.lld": true, "as": true, "ar": true,
	"nm": true, "objdump": true, "objcopy": true, "strip": true, "readelf": true, "size": true, "strings": true,
	"addr2line": true, "ranlib": true, "c++filt": true, "emcc": true, "em++": true, "icc": true, "icx": true,
	"icpx": true, "ifort": true, "ifx": true, "zig": true, "nvcc": true, "swift": true, "swiftc": true, "ghc": true,
	"java": true, "javaw": true, "javac": true, "javadoc": true, "javap": true, "jar": true, "jlink": true,
	"jpackage": true, "jshell": true, "kotlinc": true, "scalac": true, "csc": true, "vbc": true, "mcs": true,
	"dotnet": true, "msbuild": true, "rustc": true, "7z": true, "7za": true, "7zr": true,
	"curl": true,
}

// readsResponseFiles reports whether program is one of
// responseFilePrograms, by its base name without ".exe", a version suffix
// (gcc-13, clang17) or a cross-compiler prefix (x86_64-linux-gnu-gcc); or
// an LLVM tool (llvm-*, clang-*), which all read "@FILE".
func readsResponseFiles(program string) bool {
	b := programName(program)
	if responseFilePrograms[b] || strings.HasPrefix(b, "llvm-") || strings.HasPrefix(b, "clang-") {
		return true
	}
	i := strings.LastIndexByte(b, '-')
	return i > 0 && responseFilePrograms[b[i+1:]]
}

func programName(program string) string {
	b := strings.TrimSuffix(strings.ToLower(filepath.Base(program)), ".exe")
	if t := strings.TrimSuffix(strings.TrimRight(b, "0123456789."), "-"); t != "" {
		b = t
	}
	return b
}

// wrappers run the program named after their own options; their options
// that take a separate argument are listed.
var wrappers = map[string][]string{
	"env":     {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
	"sudo":    {"-u", "-g", "-p", "-C", "-D", "-R", "-r", "-t", "-T", "-U", "-h", "-c"},
	"doas":    {"-u", "-C"},
	"nice":    {"-n", "--adjustment"},
	"ionice":  {"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"},
	"time":    {"-f", "--format", "-o", "--output"},
	"stdbuf":  {"-i", "-o", "-e", "--input", "--output", "--error"},
	"timeout": {"-s", "--signal", "-k", "--kill-after"},
	"xargs": {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof", "--replace",
		"--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"},
	"npx":     {"-p", "--package", "-c", "--call"},
	"exec":    {"-a"},
	"command": nil, "nohup": nil, "ccache": nil, "sccache": nil, "distcc": nil, "icecc": nil, "setsid": nil,
}

// responseFileProgram names the program of argv that reads "@FILE"
// arguments, looking through wrappers (env VAR=x gcc, ccache gcc,
// timeout 10 curl, sudo -u u javac): "" if there is none. Where a wrapper
// runs a program a value names, it is taken to be one.
func responseFileProgram(argv []Elem) string {
	var elems []string // literal texts in order, groups flattened; "{" marks a placeholder
	var flat func([]Elem)
	flat = func(es []Elem) {
		for _, e := range es {
			if e.Group != nil {
				flat(e.Group)
				continue
			}
			text := e.Text
			for _, s := range parseText(text) {
				if s.ph {
					text = "{"
					break
				}
			}
			elems = append(elems, text)
		}
	}
	flat(argv)
	for i := 0; i < len(elems); {
		prog := elems[i]
		if readsResponseFiles(prog) {
			return programName(prog)
		}
		argOpts, ok := wrappers[programName(prog)]
		if !ok {
			return ""
		}
		// Skip the wrapper's options, VAR=x assignments and numbers
		// (timeout 10, nice 5) to the program it runs.
		j, unsure := i+1, false
		for ; j < len(elems); j++ {
			e := elems[j]
			switch {
			case e == "{":
				return programName(elems[0]) + "'s program"
			case e == "--":
				j++
			case strings.HasPrefix(e, "-") && len(e) > 1:
				if e == "-S" || e == "--split-string" || strings.HasPrefix(e, "--split-string=") {
					// env -S "gcc -c": the string is the command line.
					s := strings.TrimPrefix(e, "--split-string=")
					if s == e && j+1 < len(elems) {
						s, j = elems[j+1], j+1
					}
					if f := strings.Fields(s); len(f) > 0 && readsResponseFiles(f[0]) {
						return programName(f[0])
					}
					continue
				}
				unsure = !contains(argOpts, e) && !strings.Contains(e, "=")
				if contains(argOpts, e) {
					j++
				}
				continue
			case isAssignment(e) || isNumber(e):
				continue
			}
			break
		}
		if j >= len(elems) {
			return ""
		}
		// An option not known to take an argument may take one: the
		// element after the one found may be the program too.
		if unsure && j+1 < len(elems) && readsResponseFiles(elems[j+1]) && !readsResponseFiles(elems[j]) {
			return programName(elems[j+1])
		}
		i = j
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isAssignment reports whether s is NAME=value (env, sudo).
func isAssignment(s string) bool {
	i := strings.IndexByte(s, '=')
	return i > 0 && nameRe().MatchString(s[:i])
}

// isNumber reports whether s is a count or a duration (10, 1.5, 5m).
func isNumber(s string) bool {
	s = strings.TrimRight(s, "smhd")
	return s != "" && strings.Trim(s, "0123456789.") == ""
}
