package memories

import "os"

// longTier reports whether the long reliability tier is on (CAIRN_LONG=1,
// make test-long): tests then use RELIABILITY.md's full counts.
func longTier() bool { return os.Getenv("CAIRN_LONG") != "" }
