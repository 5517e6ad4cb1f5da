package testkit

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Visible shows the control characters of terminal output as text.
func Visible(s string) string {
	return strings.NewReplacer("\x1b", `\e`, "\r", `\r`).Replace(s)
}

var cursorUp = regexp.MustCompile(`\x1b\[\d*A`)

// CheckCleanEnd checks that a live terminal region was cleared for good:
// the cursor is shown again after it was last hidden, nothing moves the
// cursor up after that, and the output ends with a newline.
func CheckCleanEnd(t *testing.T, out string) {
	t.Helper()
	hide, show := strings.LastIndex(out, ansi.HideCursor), strings.LastIndex(out, ansi.ShowCursor)
	if hide < 0 || show < hide {
		t.Errorf("cursor last hidden at byte %d, shown at %d: want it shown at the end", hide, show)
		return
	}
	if tail := out[show:]; cursorUp.MatchString(tail) {
		t.Errorf("the cursor moves up after the live region was closed: %q", tail)
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("output does not end with a newline: %q", out[max(0, len(out)-80):])
	}
}
