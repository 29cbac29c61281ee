package rollback_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
)

func TestLayoutPackUnpack(t *testing.T) {
	for _, c := range []struct {
		name   string
		layout rollback.Layout
		fields []uint64
		want   rollback.Input
	}{
		{"inversus", rollback.Layout{3, 8, 8}, []uint64{5, 200, 17}, 5 | 200<<3 | 17<<11},
		{"zeros", rollback.Layout{3, 8, 8}, []uint64{0, 0, 0}, 0},
		{"full fields", rollback.Layout{1, 63}, []uint64{1, 1<<63 - 1}, ^rollback.Input(0)},
		{"one 64-bit field", rollback.Layout{64}, []uint64{1<<64 - 1}, ^rollback.Input(0)},
		{"buttons", rollback.Layout{1, 1, 1, 1}, []uint64{1, 0, 1, 1}, 0b1101},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := c.layout.Pack(c.fields...)
			require.NoError(t, err)
			assert.Equal(t, c.want, in)
			assert.Zero(t, in&^c.layout.Mask(), "inside the layout")
			assert.Equal(t, c.fields, c.layout.Unpack(nil, in))
		})
	}
}

func TestLayoutErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		layout rollback.Layout
		fields []uint64
		want   error // nil: a *ConfigError for the layout
	}{
		{"value too wide", rollback.Layout{3, 8}, []uint64{8, 0}, rollback.ErrInput},
		{"too few values", rollback.Layout{3, 8}, []uint64{1}, rollback.ErrInput},
		{"too many values", rollback.Layout{3}, []uint64{1, 2}, rollback.ErrInput},
		{"empty layout", rollback.Layout{}, nil, nil},
		{"zero-width field", rollback.Layout{0, 4}, []uint64{0, 0}, nil},
		{"over 64 bits", rollback.Layout{32, 33}, []uint64{0, 0}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := c.layout.Pack(c.fields...)
			if c.want != nil {
				assert.ErrorIs(t, err, c.want)
			} else {
				var ce *rollback.ConfigError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "Layout", ce.Field)
			}
			assert.Zero(t, in)
		})
	}
	assert.Equal(t, []uint64{7}, rollback.Layout{32, 33}.Unpack([]uint64{7}, 1), "an invalid layout unpacks nothing")
	assert.Equal(t, []uint64{1, 2}, rollback.Layout{4, 4}.Unpack(nil, 0xf21), "bits outside the layout are ignored")
}
