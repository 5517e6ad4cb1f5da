// Package jsonx writes the JSON of cairn's hot records (run records, the
// workspace lock) directly, byte for byte as encoding/json writes it,
// without its reflection.
package jsonx

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendString appends s quoted as encoding/json writes it (with its
// HTML escaping): printable ASCII without '"', '\\', '<', '>' or '&' is
// copied; any other string is left to encoding/json.
func AppendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
