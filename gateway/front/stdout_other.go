//go:build !unix && !windows

package front

import (
	"errors"
	"os"
)

func reserveStdout() (*os.File, func(), error) {
	return nil, nil, errors.New("front: stdout reservation needs a unix system")
}
