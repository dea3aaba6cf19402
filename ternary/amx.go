package ternary

// The parts of the AMX path (amx_linux_amd64.go) that every platform compiles: the
// batch's activation copy, which Q8Batch keeps where AMX runs, and the batch sizes.

// amxVectors is how many vectors the AMX kernel multiplies at once: a tile's 16 rows.
const amxVectors = 16

// amxActBytes returns the size of a vector's AMX copy: its whole groups of 8 blocks.
func amxActBytes(k int) int { return k / (8 * BlockSize) * (8 * BlockSize) }

// amxActs writes the AMX copy dst of the int8 values q (laid out as in [Q8]) for the
// len(dst)/128 first blocks: a block's 128 values in one run, in the order its code
// bytes pair with them in the interleaved layout (the block's four 32-byte runs of q,
// 64 bytes apart).
func amxActs(dst, q []int8) {
	for b := range len(dst) / BlockSize {
		src := q[256*(b/2)+32*(b%2):]
		d := dst[BlockSize*b : BlockSize*(b+1)]
		copy(d[0:32], src[0:32])
		copy(d[32:64], src[64:96])
		copy(d[64:96], src[128:160])
		copy(d[96:128], src[192:224])
	}
}

// amxMinBatch is the fewest vectors for which MatMulInterleavedRange takes AMX. Below
// two groups of 16 the unpacking, paid once per tile and call, and a partial group's
// padding outweigh the gain: on a 2-core Xeon VM with AMX (BenchmarkMatMulIlvAMX, 2
// threads, 5120×17408 and 17408×5120) AMX against the AVX-512 VNNI kernels ran
// 0.95–0.96× at 16 vectors, 0.97–1.01× at 24, 1.11–1.17× at 32, 1.16–1.32× at 48,
// 1.2–1.4× at 64 and 1.45–1.6× at 256.
const amxMinBatch = 32
