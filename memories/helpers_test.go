package memories

import (
	"github.com/cairn-run/cairn/internal/testkit"
	"testing"
)

// calmFiles is testkit.CalmFiles.
func calmFiles(t testing.TB, dir string, names ...string) {
	t.Helper()
	testkit.CalmFiles(t, dir, names...)
}
