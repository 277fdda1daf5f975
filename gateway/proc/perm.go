package proc

import "io/fs"

// MkdirPrivate creates dir and any missing parents (os.MkdirAll with mode
// 0700) for files only the current user may read, and makes dir itself
// private: on Linux and macOS by its mode (0700, and the files written in
// it are created 0600 by their writers); on Windows, where modes mean
// nothing, by replacing dir's access list with a protected one holding a
// single entry — full control for the current user — that every file and
// directory later created inside inherits. It is the helper for every
// place that uses 0700/0600 on Unix (configuration, trust records, caches,
// offloaded results, tokens).
//
// An existing dir is treated the same way on every OS: when it belongs to
// the current user it is tightened (on Unix every group and world mode
// bit is cleared, owner bits are kept; on Windows the access list is
// replaced); when it lets others in and belongs to someone else (or, on
// Unix, is marked shared by its sticky or setgid bit, like /tmp) it is
// left exactly as it was and the error is a *PrivateDirError (ErrNotPrivate)
// naming the directory, what lets others in, both owners and the fix. An
// existing private directory of someone else is used as it is.
func MkdirPrivate(dir string) error { return mkdirPrivate(dir) }

// OpenToOthers reports whether a directory's mode lets anyone but its
// owner read or enter it. Only Linux and macOS can say: on Windows a mode
// says nothing about access (Go reports 0777 for every directory), so it
// reports false there, and the caller must have made the directory
// private with MkdirPrivate, which sets the owner-only access list on an
// existing directory of the current user's too (and refuses another's).
func OpenToOthers(fi fs.FileInfo) bool { return openToOthers(fi) }

// CheckPrivate reports, as an error saying what is wrong, when dir is not
// private in MkdirPrivate's sense: on Linux and macOS a mode that lets
// group or others in; on Windows an access list that is not protected or
// holds anything but full control for the current user, inherited by
// what is created inside. It is how a test of a package that creates
// private directories proves it did. (Wine keeps no access lists, so on
// Wine it reports the default list it returns.)
func CheckPrivate(dir string) error { return checkPrivateDir(dir) }
