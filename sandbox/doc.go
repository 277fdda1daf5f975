// Package sandbox runs Starlark code-mode scripts under hard limits. It is a
// leaf: it imports no package of sluice, and is the only importer of
// go.starlark.net.
package sandbox

import _ "go.starlark.net/starlark"
