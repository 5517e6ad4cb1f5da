package inputs

func walkTree(abs, rel string, skip func(string) bool, workers int, files []File) ([]File, error) {
	return walkSerial(abs, rel, skip, files)
}
