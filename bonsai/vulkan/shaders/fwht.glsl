// The blockwise Walsh–Hadamard transform over a shared array (common.h's tg_fwht),
// shared by the matvec, site, GDN and attention kernels.
//
// Contract: the including file declares, BEFORE including this file (and after
// common.glsl),
//     shared float xs[...];
// tg_fwht_xs(n, blk) transforms each block of blk values of xs[0, n) in place (n a
// multiple of blk, blk a power of two): the textbook radix-2 butterflies (a+b, a−b),
// stage by stage, which hadamard's Go transform matches bit for bit. It begins and ends
// with a barrier(), so it must be called in control flow uniform over the workgroup.

#ifndef BONSAI_FWHT_GLSL
#define BONSAI_FWHT_GLSL

void tg_fwht_xs(uint n, uint blk) {
    uint half_n = n >> 1;
    for (uint h = 1u; h < blk; h <<= 1) {
        barrier();
        for (uint p = TID; p < half_n; p += NT) {
            uint i = ((p & ~(h - 1u)) << 1) | (p & (h - 1u));
            float a = xs[i];
            float b = xs[i + h];
            xs[i] = a + b;
            xs[i + h] = a - b;
        }
    }
    barrier();
}

#endif  // BONSAI_FWHT_GLSL
