package aim

import (
	"fmt"
	"testing"

	"github.com/aimtheory/aim/channel"
)

// TestNewChannel: NewChannel gives each kind of channel.Spec the theory's channel that the
// constructors of the kind give (the state evolution at T > 2: the shipped hardmax table and
// the Monte Carlo noisy softmax), and refuses an invalid Spec by its rule.
func TestNewChannel(t *testing.T) {
	tabulated := 0
	for T := 3; T <= channel.HardmaxTMax; T++ {
		if HardmaxTTabulated(T) {
			tabulated = T
			break
		}
	}
	cases := []struct {
		s    channel.Spec
		want string
	}{
		{channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 2}, "*aim.Softmax"},
		{channel.Spec{Kind: channel.KindSoftmax, T: 2, Beta: 1, Noise: 0.1}, "*aim.NoisySoftmax"},
		{channel.Spec{Kind: channel.KindSoftmax, T: 3, Beta: 1, Noise: 0.1}, "*aim.NoisySoftmaxT"},
		{channel.Spec{Kind: channel.KindHardmax, T: 2, PaperCompat: true}, "*aim.Hardmax"},
	}
	if tabulated > 0 {
		cases = append(cases, struct {
			s    channel.Spec
			want string
		}{channel.Spec{Kind: channel.KindHardmax, T: tabulated}, "*aim.HardmaxTChannel"})
	}
	for _, c := range cases {
		ch, err := NewChannel(c.s)
		if err != nil {
			t.Errorf("%v: %v", c.s, err)
			continue
		}
		if got := fmt.Sprintf("%T", ch); got != c.want {
			t.Errorf("%v: %s, want %s", c.s, got, c.want)
		}
		if ch.Tokens() != c.s.T {
			t.Errorf("%v: T = %d", c.s, ch.Tokens())
		}
	}
	if h, err := NewChannel(channel.Spec{Kind: channel.KindHardmax, T: 2, PaperCompat: true}); err == nil && !h.(*Hardmax).PaperCompat() {
		t.Error("hardmax-paper: the exact g_out")
	}
	for _, s := range []channel.Spec{
		{Kind: channel.KindSoftmax, T: 2}, {Kind: channel.KindHardmax, T: 7}, {Kind: channel.KindHardmax, T: 3, PaperCompat: true},
		{Kind: channel.KindHardmax, T: 2, Noise: 0.1}, {Kind: channel.KindSoftmax, T: 7, Beta: 1, Noise: 0.1},
	} {
		if _, err := NewChannel(s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}
