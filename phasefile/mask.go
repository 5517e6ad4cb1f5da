package phasefile

import (
	"bytes"
	"io"
	"sort"
)

// MaskWriter replaces every occurrence of the given secret values with
// "***" before writing to w, as CI systems mask secrets in logs. A secret
// split across two writes is still masked: the last len(longest)-1 bytes
// are held back until more output arrives or Close is called.
type MaskWriter struct {
	w       io.Writer
	secrets [][]byte
	hold    int
	buf     []byte
}

const maskText = "***"

func NewMaskWriter(w io.Writer, secrets []string) *MaskWriter {
	m := &MaskWriter{w: w}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		m.secrets = append(m.secrets, []byte(s))
		if len(s)-1 > m.hold {
			m.hold = len(s) - 1
		}
	}
	// Longest first, so a secret containing another is masked whole.
	sort.Slice(m.secrets, func(i, j int) bool { return len(m.secrets[i]) > len(m.secrets[j]) })
	return m
}

func (m *MaskWriter) Write(p []byte) (int, error) {
	m.buf = append(m.buf, p...)
	m.buf = m.mask(m.buf)
	if len(m.buf) > m.hold {
		n := len(m.buf) - m.hold
		// Do not cut a mask in half; the masked text never contains a
		// secret, so emitting it whole is safe.
		if _, err := m.w.Write(m.buf[:n]); err != nil {
			return 0, err
		}
		m.buf = append(m.buf[:0], m.buf[n:]...)
	}
	return len(p), nil
}

func (m *MaskWriter) mask(b []byte) []byte {
	for _, s := range m.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(maskText))
		}
	}
	return b
}

// Close flushes the held-back bytes.
func (m *MaskWriter) Close() error {
	if len(m.buf) == 0 {
		return nil
	}
	_, err := m.w.Write(m.mask(m.buf))
	m.buf = nil
	return err
}
