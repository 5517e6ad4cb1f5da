//go:build !linux

package inputs

// walkTree is walkSerial: the parallel walk reads directories with
// Linux's system calls.
func walkTree(abs, rel string, skip func(string) bool, _ int, files []File) ([]File, error) {
	return walkSerial(abs, rel, skip, files)
}
