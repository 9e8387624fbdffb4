//go:build !(linux || darwin)

package service

// raiseFileLimit does nothing where the limit is not a POSIX rlimit (or differs in type); 0
// means unknown.
func raiseFileLimit() (uint64, error) { return 0, nil }

// FileLimit returns 0 (unknown) where the limit is not a POSIX rlimit.
func FileLimit() uint64 { return 0 }
