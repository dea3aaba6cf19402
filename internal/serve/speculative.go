package serve

import (
	"fmt"
	"strings"

	"github.com/bonsai-go/sdk/bonsai"
)

// The speculative decoding modes, the values of serve -speculative and of a request's
// "speculative" field (bonsai.SpeculativeOptions documents the decoding):
//   - SpeculativeAuto: the lookup drafter, and the cost model decides how many tokens to
//     draft at each pass, down to none where drafting does not pay;
//   - SpeculativeOff: plain steps;
//   - SpeculativeLookup: the lookup drafter at every pass, without the cost model
//     (bonsai.SpeculativeOptions.Always), to measure it or force it;
//   - SpeculativeMTP: the model file's multi-token-prediction head drafts, under the
//     cost model (bonsai.SpeculativeOptions.MTP); a model without a head refuses it.
const (
	SpeculativeAuto   = "auto"
	SpeculativeOff    = "off"
	SpeculativeLookup = "lookup"
	SpeculativeMTP    = "mtp"
)

// SpeculativeModes are the modes, in the order a usage line lists them.
var SpeculativeModes = []string{SpeculativeAuto, SpeculativeOff, SpeculativeLookup, SpeculativeMTP}

// SpeculativeOptions returns the generation options of a speculative decoding mode
// (nil for off; "" is off, the zero Defaults'), or an error naming the modes.
func SpeculativeOptions(mode string) (*bonsai.SpeculativeOptions, error) {
	switch mode {
	case SpeculativeAuto:
		return &bonsai.SpeculativeOptions{}, nil
	case SpeculativeOff, "":
		return nil, nil
	case SpeculativeLookup:
		return &bonsai.SpeculativeOptions{Always: true}, nil
	case SpeculativeMTP:
		return &bonsai.SpeculativeOptions{MTP: true}, nil
	}
	return nil, fmt.Errorf("%q is not a speculative decoding mode: want one of %s", mode, strings.Join(SpeculativeModes, ", "))
}
