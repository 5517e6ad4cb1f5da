package memo

import (
	"github.com/cairn-run/cairn/spec"

	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fill sets every exported field reachable from v to a distinct non-zero
// value: strings, numbers, bools, pointers, two-element slices and maps.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := 0; i < 2; i++ {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	default:
		panic(fmt.Sprintf("fill: %s not handled; teach the memo codec and this test about it", v.Type()))
	}
}

// TestMemoCodecCoversEveryField: a record whose every field (of the spec,
// its experiment, phases, pools, budgets, Slurm settings and ranges) holds
// a value survives the memo's encoding, so a field added to the model and
// not to the codec fails here rather than vanishing from memoised specs.
func TestMemoCodecCoversEveryField(t *testing.T) {
	var rec memoRecord
	n := 0
	fill(reflect.ValueOf(&rec).Elem(), &n)
	rec.Format = memoFormat
	got, err := decodeMemo(encodeMemo(&rec))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&rec, got, cmpopts.IgnoreUnexported(spec.Spec{}, spec.Phase{})); diff != "" {
		t.Errorf("memo round trip lost fields (-want +got):\n%s", diff)
	}

	// nil and empty stay apart.
	empty := memoRecord{Format: memoFormat, Phases: []*spec.Phase{{Addr: "a", Inputs: []string{}, Params: map[string]string{}}}, Blocks: map[string][]string{}}
	got, err = decodeMemo(encodeMemo(&empty))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&empty, got, cmpopts.IgnoreUnexported(spec.Spec{}, spec.Phase{})); diff != "" {
		t.Errorf("nil/empty round trip (-want +got):\n%s", diff)
	}
}
