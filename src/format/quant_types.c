/*
 * quant_types: the size table of every ggml type id and the IQ4 codebook (see quant.h).
 * Pure data, below both the dequantizers (quant.c) and the quantizer searches (quant_search.c).
 */
#include "quant.h"

#include <strings.h>

const um_type_size um_type_sizes[UM_TYPE_COUNT] = {
    [UM_TYPE_F32]     = { "f32",     1,   4 },
    [UM_TYPE_F16]     = { "f16",     1,   2 },
    [UM_TYPE_Q4_0]    = { "q4_0",    32,  18 },
    [UM_TYPE_Q4_1]    = { "q4_1",    32,  20 },
    [UM_TYPE_Q5_0]    = { "q5_0",    32,  22 },
    [UM_TYPE_Q5_1]    = { "q5_1",    32,  24 },
    [UM_TYPE_Q8_0]    = { "q8_0",    32,  34 },
    [UM_TYPE_Q8_1]    = { "q8_1",    32,  36 },
    [UM_TYPE_Q2_K]    = { "q2_K",    256, 84 },
    [UM_TYPE_Q3_K]    = { "q3_K",    256, 110 },
    [UM_TYPE_Q4_K]    = { "q4_K",    256, 144 },
    [UM_TYPE_Q5_K]    = { "q5_K",    256, 176 },
    [UM_TYPE_Q6_K]    = { "q6_K",    256, 210 },
    [UM_TYPE_Q8_K]    = { "q8_K",    256, 292 },
    [UM_TYPE_IQ2_XXS] = { "iq2_xxs", 256, 66 },
    [UM_TYPE_IQ2_XS]  = { "iq2_xs",  256, 74 },
    [UM_TYPE_IQ3_XXS] = { "iq3_xxs", 256, 98 },
    [UM_TYPE_IQ1_S]   = { "iq1_s",   256, 50 },
    [UM_TYPE_IQ4_NL]  = { "iq4_nl",  32,  18 },
    [UM_TYPE_IQ3_S]   = { "iq3_s",   256, 110 },
    [UM_TYPE_IQ2_S]   = { "iq2_s",   256, 82 },
    [UM_TYPE_IQ4_XS]  = { "iq4_xs",  256, 136 },
    [UM_TYPE_I8]      = { "i8",      1,   1 },
    [UM_TYPE_I16]     = { "i16",     1,   2 },
    [UM_TYPE_I32]     = { "i32",     1,   4 },
    [UM_TYPE_I64]     = { "i64",     1,   8 },
    [UM_TYPE_F64]     = { "f64",     1,   8 },
    [UM_TYPE_IQ1_M]   = { "iq1_m",   256, 56 },
    [UM_TYPE_BF16]    = { "bf16",    1,   2 },
    [UM_TYPE_TQ1_0]   = { "tq1_0",   256, 54 },
    [UM_TYPE_TQ2_0]   = { "tq2_0",   256, 66 },
    [UM_TYPE_MXFP4]   = { "mxfp4",   32,  17 },
};

const char *um_type_name(uint32_t t) {
    if (t >= UM_TYPE_COUNT || um_type_sizes[t].blck == 0) return "?";
    return um_type_sizes[t].name;
}

int um_type_from_name(const char *name) {
    for (int t = 0; t < UM_TYPE_COUNT; t++)
        if (um_type_sizes[t].blck && strcasecmp(um_type_sizes[t].name, name) == 0) return t;
    return -1;
}

/* The IQ4_NL / IQ4_XS codebook: the signed level of each 4-bit code. */
const int8_t um_iq4nl_values[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
};
