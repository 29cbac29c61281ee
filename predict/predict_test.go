package predict_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/predict"
)

func TestRepeatLast(t *testing.T) {
	var p predict.Predictor = predict.RepeatLast{}
	assert.Equal(t, uint64(0), p.Predict(predict.Context{Frame: 0, LastFrame: -1}))
	assert.Equal(t, uint64(0x2a), p.Predict(predict.Context{Player: 1, Frame: 10, Last: 0x2a, LastFrame: 7}))
}

func ExampleFunc() {
	// A predictor that assumes the fire button (bit 0) is released.
	p := predict.Func(func(c predict.Context) uint64 { return c.Last &^ 1 })
	fmt.Printf("%#x\n", p.Predict(predict.Context{Last: 0x51, LastFrame: 3, Frame: 5}))
	// Output: 0x50
}
