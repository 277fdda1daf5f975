// Package proc spawns local server processes in their own process group and
// tears the whole group down. It is the only package that imports
// golang.org/x/sys and must never import another package of sluice.
package proc

import _ "golang.org/x/sys/unix"
