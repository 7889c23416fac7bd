package device

import (
	"math"
	"strings"
	"testing"
)

// TestChannelNoiseValidate: the label noise Delta is accepted for softmax at 2 <= T <= 6 (0 is
// the noiseless channel) and refused, with the reason, when negative or not finite, on hardmax
// and at T > 6; String names it.
func TestChannelNoiseValidate(t *testing.T) {
	for _, c := range []Channel{{Kind: Softmax, T: 2, Beta: 1, Noise: 0.01}, {Kind: Softmax, T: 3, Beta: 1}, {Kind: Softmax, T: 3, Beta: 1, Noise: 0.01}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []struct {
		ch   Channel
		want string
	}{
		{Channel{Kind: Softmax, T: 2, Beta: 1, Noise: -1}, "Delta >= 0"},
		{Channel{Kind: Softmax, T: 2, Beta: 1, Noise: math.NaN()}, "Delta >= 0"},
		{Channel{Kind: Softmax, T: 2, Beta: 1, Noise: math.Inf(1)}, "Delta >= 0"},
		{Channel{Kind: Softmax, T: 7, Beta: 1, Noise: 0.01}, "2 <= T <= 6"},
		{Channel{Kind: Hardmax, T: 2, Noise: 0.01}, "softmax only"},
	} {
		if err := c.ch.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", c.ch, err, c.want)
		}
	}
	if s := (Channel{Kind: Softmax, T: 2, Beta: 1, Noise: 0.01}).String(); s != "softmax-noise0.01" {
		t.Errorf("String = %q", s)
	}
}
