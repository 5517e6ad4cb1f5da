//go:build !linux

package inputs

// walkTree is walkSerial: the parallel walk reads directories with
// Linux's system calls. There is no directory watch here: v's watch, if
// started, is never quiet.
func walkTree(abs, rel string, skip func(string) bool, _ int, files []File, _ *Watched) ([]File, error) {
	return walkSerial(abs, rel, skip, files)
}
