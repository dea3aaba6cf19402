// The two ternary block formats as the kernels read them, where they lie in the file:
// PQ2_0 (34 bytes per 128 weights: fp16 d, then 2-bit codes) and PTQ1_0 (28 bytes: 24 + 2
// bytes of base-3 trits, then fp16 d). Both hold codes c ∈ {0, 1, 2} with value (c−1)·d.

#ifndef BONSAI_FORMATS_H
#define BONSAI_FORMATS_H

#include "common.h"

#define FMT_PQ2 0
#define FMT_PTQ1 1

// Bytes per 128-weight block and the byte offset of its fp16 scale.
#define PQ2_BLOCK 34u
#define PTQ1_BLOCK 28u
#define PTQ1_SCALE 26u
// PTQ1_0 seen as 16-bit words: 14 per block, the scale in word 13.
#define PTQ1_US 14u

inline float block_scale(device const uchar* b, uint at) {
    return float(as_type<half>(ushort(uint(b[at]) | (uint(b[at + 1u]) << 8))));
}

// Trit n (0..4) of a PTQ1_0 byte: the byte times 3ⁿ truncated to 8 bits, times 3, over 256.
inline uint ptq1_trit(uint b, uint n) {
    uint p = 1u;
    for (uint i = 0; i < n; i++) p *= 3u;
    return (((b * p) & 255u) * 3u) >> 8;
}

// The code (0..2; PQ2_0 may hold 3) of element j (0..127) of the block at b.
template <int FMT>
inline uint block_code(device const uchar* b, uint j) {
    if (FMT == FMT_PQ2) return (uint(b[2u + j / 4u]) >> (2u * (j % 4u))) & 3u;
    // PTQ1_0: elements 0–79 are trit j/16 of qs[j%16]; 80–119 trit (j−80)/8 of
    // qs[16 + (j−80)%8]; 120–127 trit (j−120)/2 of qh[(j−120)%2].
    uint byte, n;
    if (j < 80u) {
        byte = j % 16u;
        n = j / 16u;
    } else if (j < 120u) {
        byte = 16u + (j - 80u) % 8u;
        n = (j - 80u) / 8u;
    } else {
        byte = 24u + (j - 120u) % 2u;
        n = (j - 120u) / 2u;
    }
    return ptq1_trit(uint(b[byte]), n);
}

// The value of element e of a row of blocks.
template <int FMT>
inline float ternary_value(device const uchar* row, uint e) {
    uint bb = FMT == FMT_PQ2 ? PQ2_BLOCK : PTQ1_BLOCK;
    device const uchar* b = row + (e / 128u) * bb;
    float d = block_scale(b, FMT == FMT_PQ2 ? 0u : PTQ1_SCALE);
    return float(int(block_code<FMT>(b, e % 128u)) - 1) * d;
}

#endif  // BONSAI_FORMATS_H
