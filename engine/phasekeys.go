package engine

import "crypto/sha256"

// fingerprint hashes what phase p's key is computed from, as gathered in
// g (inputs.Gathered.Fingerprint), with the tokens the sensitive values
// leave in keys, never the values.
func (e *Engine) fingerprint(g *gathered) [sha256.Size]byte {
	tokens := make([]string, len(e.spec.SensitiveValues))
	for i, v := range e.spec.SensitiveValues {
		tokens[i] = sensitiveToken(v)
	}
	return g.Fingerprint(tokens)
}
