package funcs

import "github.com/zclconf/go-cty/cty"

// MaxExponent bounds the decimal exponent of the number literals cairn
// reads. HCL reads every number literal into a 512-bit big.Float, which
// for a huge exponent is slow (it grows with the exponent), on a typo.
// No experiment needs a number beyond 1e±4096 (a float64 ends at
// 1e±308).
const MaxExponent = 4096

// maxBinaryExponent bounds the binary exponent (big.Float's MantExp) of
// the numbers a spec's values may hold: 2^13607 is just past 1e4096
// (MaxExponent).
const maxBinaryExponent = 13607

// HugeNumberIn returns a number held in v (at any depth) whose exponent
// is beyond ±MaxExponent, and true; else false. Such a number comes from
// a string ("1e-80000" + 0, jsondecode, a number variable given as text):
// reading it is quick, but writing it out (into a command, params, the
// plan) takes seconds to minutes, growing with the exponent's square.
func HugeNumberIn(v cty.Value) (cty.Value, bool) {
	if !v.IsKnown() || v.IsNull() {
		return cty.NilVal, false
	}
	t := v.Type()
	switch {
	case t == cty.Number:
		if e := v.AsBigFloat().MantExp(nil); e > maxBinaryExponent || e < -maxBinaryExponent {
			return v, true
		}
		return cty.NilVal, false
	case t.IsPrimitiveType() || t == cty.DynamicPseudoType:
		return cty.NilVal, false
	case v.CanIterateElements():
		for it := v.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); ev.IsKnown() {
				if n, ok := HugeNumberIn(ev); ok {
					return n, true
				}
			}
		}
	}
	return cty.NilVal, false
}

// MayHoldNumber reports whether values of type t can hold a number,
// so that HugeNumberIn need not walk a list of 100,000 strings.
func MayHoldNumber(t cty.Type) bool {
	switch {
	case t == cty.Number || t == cty.DynamicPseudoType:
		return true
	case t.IsPrimitiveType():
		return false
	case t.IsListType() || t.IsSetType() || t.IsMapType():
		return MayHoldNumber(t.ElementType())
	case t.IsObjectType():
		for _, at := range t.AttributeTypes() {
			if MayHoldNumber(at) {
				return true
			}
		}
		return false
	case t.IsTupleType():
		for _, et := range t.TupleElementTypes() {
			if MayHoldNumber(et) {
				return true
			}
		}
		return false
	}
	return true
}
