package clitool

import (
	"fmt"
	"path/filepath"
	"strings"
)

// atFile refuses an element that a value makes start with "@" when the
// program reads "@FILE" arguments as more arguments (response files): the
// value would name a file whose text becomes options, and the program's
// complaints about them (that text) come back in its stderr. "--" does not
// end this: these programs expand "@FILE" wherever it appears. An element
// whose own literal text starts with "@" is the declaration's, and
// allowDash on the input lets its values start with "@" too.
func (r *renderer) atFile(n *node, elem string) error {
	if !r.t.atFiles || !strings.HasPrefix(elem, "@") {
		return nil
	}
	for _, s := range n.segs {
		if s.p == nil {
			if s.lit != "" {
				return nil // the declaration's own "@"
			}
			continue
		}
		if s.p.Type == TypeBoolean || r.vals[s.p].str == "" {
			continue
		}
		if s.p.AllowDash {
			return nil
		}
		return r.atFileErr(s.p)
	}
	return nil
}

func (r *renderer) atFileErr(p *param) error {
	return &ArgError{Tool: r.t.spec.Name, Arg: p.Name, Reason: ReasonAtFile,
		Msg: fmt.Sprintf("starts with \"@\", which %s reads as a file of more arguments; values may not start with \"@\" here", filepath.Base(r.t.command))}
}

// responseFilePrograms expand an "@FILE" argument into the file's text:
// GCC and binutils (libiberty's expandargv), LLVM, the JDK launcher and
// tools, the .NET and Rust compilers; and curl, whose data and form
// values read "@FILE".
var responseFilePrograms = map[string]bool{
	"gcc": true, "g++": true, "cc": true, "c++": true, "cpp": true, "gfortran": true, "gccgo": true, "gdc": true,
	"clang": true, "clang++": true, "clang-cl": true, "cl": true, "link": true, "lld": true, "ld": true, "ld.bfd": true,
	"ld.gold": true, "ld.lld": true, "lld-link": true, "as": true, "ar": true, "nm": true, "objdump": true, "objcopy": true,
	"strip": true, "readelf": true, "size": true, "strings": true, "addr2line": true, "ranlib": true, "c++filt": true,
	"java": true, "javac": true, "javadoc": true, "javap": true, "jar": true, "jlink": true, "jpackage": true, "jshell": true,
	"kotlinc": true, "scalac": true, "csc": true, "vbc": true, "dotnet": true, "msbuild": true, "rustc": true,
	"curl": true,
}

// readsResponseFiles reports whether program is one of
// responseFilePrograms, by its base name without ".exe", a version suffix
// (gcc-13, clang17) or a cross-compiler prefix (x86_64-linux-gnu-gcc).
func readsResponseFiles(program string) bool {
	b := strings.TrimSuffix(strings.ToLower(filepath.Base(program)), ".exe")
	b = strings.TrimSuffix(strings.TrimRight(b, "0123456789."), "-")
	if responseFilePrograms[b] {
		return true
	}
	i := strings.LastIndexByte(b, '-')
	return i > 0 && responseFilePrograms[b[i+1:]]
}
