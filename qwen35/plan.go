package qwen35

// Plan is the forward pass of a Bonsai qwen35 model as the backends run it: which
// activation sites there are, the normalisation and the rotation width of each, the
// products that read it, the mixer, and where the residual stream is added to. It is
// stated here once; each backend follows it with its own fusion (the CPU runs each
// site's products as one parallel loop, Metal fuses the norm and the rotation into the
// products' kernels).
//
// The pass, per token: x = Rᵀ·dequant(Embedding row) (the rows are stored rotated at
// width Embedding: transform, then signs); then per layer
//
//	h   = RMSNorm(x)·In.Norm            the In site (rotated at In.Width for In.Products;
//	                                    In.Unrotated read h as it is)
//	mix = Mixer(In's products)           Gated DeltaNet or gated attention
//	x  += Out.Products[0](R·mix)         the Out site, at Out.Width
//	h   = RMSNorm(x)·FFNIn.Norm          the FFNIn site: FFNGate and FFNUp
//	x  += FFNOut.Products[0](R·SwiGLU(gate, up))
//
// and the logits are Head.Products[0](R·RMSNorm(x)·Head.Norm).
type Plan struct {
	Embedding      *Matrix     // rows stored rotated: dequantise, then invert the rotation of width EmbeddingWidth
	EmbeddingWidth int         // the width of the embedding's rotation: Config.Embedding
	Layers         []LayerPlan // one per decoder layer, in order
	Head           Site
}

// Sites returns the plan's sites: the head's, then each layer's In, Out, FFNIn and
// FFNOut, in order.
func (p *Plan) Sites() []*Site {
	sites := []*Site{&p.Head}
	for i := range p.Layers {
		l := &p.Layers[i]
		sites = append(sites, &l.In, &l.Out, &l.FFNIn, &l.FFNOut)
	}
	return sites
}

// Mixer is a layer's token mixer.
type Mixer uint8

const (
	MixerGDN       Mixer = iota // Gated DeltaNet: In.Products are attn_qkv then attn_gate, In.Unrotated ssm_alpha then ssm_beta
	MixerAttention              // gated full attention: In.Products are attn_q (rows per head: query | gate), attn_k, attn_v
)

// String returns "gdn" or "attention".
func (m Mixer) String() string {
	if m == MixerAttention {
		return "attention"
	}
	return "gdn"
}

// LayerPlan is one decoder layer's part of the plan.
type LayerPlan struct {
	Layer *Layer // the layer's weights
	Mixer Mixer  // its token mixer, which says what In holds
	// In is the mixer's input site; Out the mixer output's (one product, added to the
	// residual stream).
	In, Out Site
	// FFNIn is the MLP's input site (ffn_gate, ffn_up); FFNOut reads SwiGLU(gate, up)
	// (ffn_down, added to the residual stream).
	FFNIn, FFNOut Site
}

// Site is an activation site: one vector, normalised when Norm is set and rotated once at
// Width, read by every product of the site. Every product's input width K is Width.
type Site struct {
	Name      string    // "attn_in", "mix_out", "ffn_in", "ffn_out", "head"
	Norm      []float32 // the RMSNorm gain (stored +1: multiply as is), or nil
	Width     int
	Products  []*Matrix     // ternary, folded with the rotation: they read R·input
	Unrotated []*BF16Matrix // read the normalised input before the rotation
	// Residual: the site's single product is added to the residual stream.
	Residual bool
}

// Rows returns the summed output rows of the site's products.
func (s *Site) Rows() int {
	n := 0
	for _, m := range s.Products {
		n += m.N
	}
	for _, m := range s.Unrotated {
		n += m.N
	}
	return n
}

// Plan returns the forward pass over w's tensors. The plan points into w.
func (w *Weights) Plan() *Plan {
	c := &w.Config
	p := &Plan{
		Embedding:      &w.TokenEmbedding,
		EmbeddingWidth: c.Embedding,
		Layers:         make([]LayerPlan, len(w.Layers)),
		Head:           Site{Name: "head", Norm: w.OutputNorm, Width: c.Embedding, Products: []*Matrix{&w.Output}},
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		lp := LayerPlan{
			Layer:  l,
			FFNIn:  Site{Name: "ffn_in", Norm: l.PostAttnNorm, Width: c.Embedding, Products: []*Matrix{&l.FFNGate, &l.FFNUp}},
			FFNOut: Site{Name: "ffn_out", Width: c.FeedForward, Products: []*Matrix{&l.FFNDown}, Residual: true},
		}
		if l.Attention {
			lp.Mixer = MixerAttention
			lp.In = Site{Name: "attn_in", Norm: l.AttnNorm, Width: c.Embedding, Products: []*Matrix{&l.Q, &l.K, &l.V}}
			lp.Out = Site{Name: "mix_out", Width: c.AttentionWidth(), Products: []*Matrix{&l.O}, Residual: true}
		} else {
			lp.Mixer = MixerGDN
			lp.In = Site{Name: "attn_in", Norm: l.AttnNorm, Width: c.Embedding, Products: []*Matrix{&l.QKV, &l.Gate},
				Unrotated: []*BF16Matrix{&l.Alpha, &l.Beta}}
			lp.Out = Site{Name: "mix_out", Width: c.InnerSize, Products: []*Matrix{&l.SSMOut}, Residual: true}
		}
		p.Layers[i] = lp
	}
	return p
}
