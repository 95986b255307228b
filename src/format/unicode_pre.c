/*
 * unicode_pre: pre-tokenizer scanners over code points (see unicode_pre.h for the contract).
 *
 * Layout: UTF-8 decoding and classes; the matchers, one per regex (each comment gives the
 * regex it implements); the chains of matchers per pre-tokenizer; the splitter.
 * Positions inside a matcher are code-point indices into one piece [.., end): a regex only
 * ever sees the piece it is splitting, so "$" and the lookahead "(?!\S)" test against `end`.
 */
#include "unicode_pre.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ------------------------------------------------------------------ UTF-8 and classes */

size_t upre_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t b0 = s[0];
    if (b0 < 0x80) { *cp = b0; return 1; }
    size_t need;
    uint32_t v, min;
    if      ((b0 & 0xE0) == 0xC0) { need = 2; v = b0 & 0x1F; min = 0x80; }
    else if ((b0 & 0xF0) == 0xE0) { need = 3; v = b0 & 0x0F; min = 0x800; }
    else if ((b0 & 0xF8) == 0xF0) { need = 4; v = b0 & 0x07; min = 0x10000; }
    else { *cp = UPRE_INVALID; return 1; }
    if (n < need) { *cp = UPRE_INVALID; return 1; }
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) { *cp = UPRE_INVALID; return 1; }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) { *cp = UPRE_INVALID; return 1; }
    *cp = v;
    return need;
}

size_t upre_utf8_encode(uint32_t cp, uint8_t out[4]) {
    if (cp < 0x80) { out[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) { out[0] = (uint8_t)(0xC0 | (cp >> 6)); out[1] = (uint8_t)(0x80 | (cp & 0x3F)); return 2; }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (uint8_t)(0xF0 | (cp >> 18));
        out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (uint8_t)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

/* The Unicode White_Space property (what \s matches in the regex engines the vocabularies
 * were made with). */
static int is_white_space(uint32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

unsigned upre_class(uint32_t cp) {
    if (cp == UPRE_INVALID) return 0;
    unsigned ws = is_white_space(cp) ? UPRE_WS : 0;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
        return ws | UPRE_L;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return ws | UPRE_N;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        return ws | UPRE_P;
    case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
        return ws | UPRE_S;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
        return ws | UPRE_M;
    default:
        return ws;
    }
}

/* ------------------------------------------------------------------ matchers */

typedef struct ctext {
    const uint32_t *cp;         /* (n) code points, UPRE_INVALID for undecodable bytes */
    const uint8_t  *cls;        /* (n) class bits */
} ctext;

/* Returns the match length in code points at pos (pos < end), 0 for no match. */
typedef size_t (*matcher)(const ctext *t, size_t pos, size_t end);

static int is_l(const ctext *t, size_t i)  { return t->cls[i] & UPRE_L; }
static int is_n(const ctext *t, size_t i)  { return t->cls[i] & UPRE_N; }
static int is_ws(const ctext *t, size_t i) { return t->cls[i] & UPRE_WS; }
/* [^\s\p{L}\p{N}]: anything else, including marks, controls and undecodable bytes */
static int is_other(const ctext *t, size_t i) { return !(t->cls[i] & (UPRE_WS | UPRE_L | UPRE_N)); }
static int is_nl(const ctext *t, size_t i) { return t->cp[i] == '\r' || t->cp[i] == '\n'; }

static size_t run_of(const ctext *t, size_t i, size_t end, int (*pred)(const ctext *, size_t)) {
    size_t j = i;
    while (j < end && pred(t, j)) j++;
    return j - i;
}

static uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d, case-sensitive or (?i:...) with ASCII folding */
static size_t match_contraction(const ctext *t, size_t pos, size_t end, int fold) {
    if (t->cp[pos] != '\'' || pos + 1 >= end) return 0;
    uint32_t a = t->cp[pos + 1];
    if (fold) a = ascii_lower(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= end) return 0;
    uint32_t b = t->cp[pos + 2];
    if (fold) b = ascii_lower(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* \s+(?!\S)|\s+ : a whitespace run, leaving its last character for the next match when a
 * non-space follows (the lookahead backtracks one character), unless the run is one long. */
static size_t match_space_run(const ctext *t, size_t pos, size_t end) {
    size_t n = run_of(t, pos, end, is_ws);
    if (n > 1 && pos + n < end) return n - 1;
    return n;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t m_gpt2(const ctext *t, size_t pos, size_t end) {
    size_t m = match_contraction(t, pos, end, 0);
    if (m) return m;
    size_t q = pos + (t->cp[pos] == ' ' && pos + 1 < end);
    if (is_l(t, q))     return q - pos + run_of(t, q, end, is_l);
    if (is_n(t, q))     return q - pos + run_of(t, q, end, is_n);
    if (is_other(t, q)) return q - pos + run_of(t, q, end, is_other);
    return match_space_run(t, pos, end);
}

/* Llama-3 and Qwen2, differing only in the digit run limit:
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,K}| ?[^\s\p{L}\p{N}]+[\r\n]*
 * |\s*[\r\n]+|\s+(?!\S)|\s+
 * (LLaDA-MoE's "\s*[\r\n]" and its possessive quantifiers give the same splits as Qwen2's.) */
static size_t m_llama_family(const ctext *t, size_t pos, size_t end, size_t max_digits) {
    size_t m = match_contraction(t, pos, end, 1);
    if (m) return m;
    if (is_l(t, pos)) return run_of(t, pos, end, is_l);
    if (!is_nl(t, pos) && !is_n(t, pos) && pos + 1 < end && is_l(t, pos + 1))
        return 1 + run_of(t, pos + 1, end, is_l);
    if (is_n(t, pos)) {
        size_t n = run_of(t, pos, end, is_n);
        return n < max_digits ? n : max_digits;
    }
    size_t q = pos + (t->cp[pos] == ' ' && pos + 1 < end);
    if (is_other(t, q)) {
        size_t j = q + run_of(t, q, end, is_other);
        return j - pos + run_of(t, j, end, is_nl);
    }
    /* \s*[\r\n]+ : greedy \s* backtracks to the last \r or \n of the whitespace run */
    size_t n = run_of(t, pos, end, is_ws);
    for (size_t k = n; k > 0; k--)
        if (is_nl(t, pos + k - 1)) return k;
    return match_space_run(t, pos, end);
}

static size_t m_llama3(const ctext *t, size_t pos, size_t end) { return m_llama_family(t, pos, end, 3); }
static size_t m_qwen2(const ctext *t, size_t pos, size_t end)  { return m_llama_family(t, pos, end, 1); }

/* [\r\n] */
static size_t m_newline(const ctext *t, size_t pos, size_t end) { return is_nl(t, pos) ? 1 : 0; }

/* \p{N} and \p{N}+ */
static size_t m_digit(const ctext *t, size_t pos, size_t end)      { return is_n(t, pos) ? 1 : 0; }
static size_t m_digit_run(const ctext *t, size_t pos, size_t end)  { return run_of(t, pos, end, is_n); }

/* [0-9][0-9][0-9] */
static size_t m_ascii_digit3(const ctext *t, size_t pos, size_t end) {
    if (pos + 3 > end) return 0;
    for (size_t i = pos; i < pos + 3; i++)
        if (t->cp[i] < '0' || t->cp[i] > '9') return 0;
    return 3;
}

/* \s+$ */
static size_t m_space_to_end(const ctext *t, size_t pos, size_t end) {
    size_t n = run_of(t, pos, end, is_ws);
    return (n && pos + n == end) ? n : 0;
}

typedef struct cp_range { uint32_t lo, hi; } cp_range;

static int in_ranges(uint32_t cp, const cp_range *r, size_t n) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return 1;
    }
    return 0;
}

/* DeepSeek-LLM's explicit letter class (sorted, inclusive ranges), from its tokenizer.json. */
static const cp_range deepseek_letters[] = {
    {0x0041,0x005A}, {0x0061,0x007A}, {0x00B5,0x00B5}, {0x00C0,0x00D6}, {0x00D8,0x00F6}, {0x00F8,0x01BA},
    {0x01BC,0x01BF}, {0x01C4,0x0293}, {0x0295,0x02AF}, {0x0370,0x0373}, {0x0376,0x0377},
    {0x037B,0x037D}, {0x037F,0x037F}, {0x0386,0x0386}, {0x0388,0x038A}, {0x038C,0x038C}, {0x038E,0x03A1},
    {0x03A3,0x03F5}, {0x03F7,0x0481}, {0x048A,0x052F}, {0x0531,0x0556}, {0x10A0,0x10C5}, {0x13A0,0x13F5},
    {0x13F8,0x13FD}, {0x1C90,0x1CBA}, {0x1CBD,0x1CBF}, {0x1D00,0x1D2B}, {0x1D6B,0x1D77}, {0x1D79,0x1D9A},
    {0x1E00,0x1F15}, {0x1F18,0x1F1D}, {0x1F20,0x1F45}, {0x1F48,0x1F4D}, {0x1F50,0x1F57}, {0x1F59,0x1F59},
    {0x1F5B,0x1F5B}, {0x1F5D,0x1F5D}, {0x1F5F,0x1F7D}, {0x1F80,0x1FB4}, {0x1FB6,0x1FBC}, {0x1FBE,0x1FBE},
    {0x1FC2,0x1FC4}, {0x1FC6,0x1FCC}, {0x1FD0,0x1FD3}, {0x1FD6,0x1FDB}, {0x1FE0,0x1FEC}, {0x1FF2,0x1FF4},
    {0x1FF6,0x1FFC}, {0x2102,0x2102}, {0x2107,0x2107}, {0x210A,0x2113}, {0x2115,0x2115}, {0x2119,0x211D},
    {0x2124,0x2124}, {0x2126,0x2126}, {0x2128,0x2128}, {0x212A,0x212D}, {0x212F,0x2134}, {0x2139,0x2139},
    {0x213C,0x213F}, {0x2145,0x2149}, {0x214E,0x214E}, {0x2183,0x2184}, {0x2C00,0x2C7B},
    {0x2C7E,0x2CE4}, {0x2CEB,0x2CEE}, {0x2CF2,0x2CF3}, {0xA640,0xA66D}, {0xA680,0xA69B},
    {0xA722,0xA76F}, {0xA771,0xA787}, {0xA78B,0xA78E}, {0xAB70,0xABBF}, {0xFB00,0xFB06}, {0xFB13,0xFB17},
    {0xFF21,0xFF3A}, {0xFF41,0xFF5A}, {0x10400,0x1044F}, {0x104B0,0x104D3}, {0x104D8,0x104FB}, {0x10C80,0x10CB2},
    {0x10CC0,0x10CF2}, {0x118A0,0x118DF}, {0x1E900,0x1E943},
};

/* DeepSeek-LLM's punctuation class [!-/:-~！-／：-～‘-‟　-。] (sorted). */
static const cp_range deepseek_punct[] = {
    {0x21,0x2F}, {0x3A,0x7E}, {0x2018,0x201F}, {0x3000,0x3002}, {0xFF01,0xFF0F}, {0xFF1A,0xFF5E},
};

/* DeepSeek's CJK class [一-龥ࠀ-一가-퟿] (sorted; the first two ranges touch at U+4E00). */
static const cp_range deepseek_cjk[] = {
    {0x0800,0x9FA5}, {0xAC00,0xD7FF},
};

static int is_ds_letter(const ctext *t, size_t i) { return in_ranges(t->cp[i], deepseek_letters, UM_ARRAY_LEN(deepseek_letters)); }
static int is_ds_punct(const ctext *t, size_t i)  { return in_ranges(t->cp[i], deepseek_punct, UM_ARRAY_LEN(deepseek_punct)); }
static int is_ds_cjk(const ctext *t, size_t i)    { return in_ranges(t->cp[i], deepseek_cjk, UM_ARRAY_LEN(deepseek_cjk)); }
static int is_p(const ctext *t, size_t i)         { return t->cls[i] & UPRE_P; }

/* \s?X+ for a class X */
static size_t opt_space_then_run(const ctext *t, size_t pos, size_t end, int (*pred)(const ctext *, size_t)) {
    if (is_ws(t, pos) && pos + 1 < end && pred(t, pos + 1)) return 1 + run_of(t, pos + 1, end, pred);
    return run_of(t, pos, end, pred);
}

static size_t m_ds_letters(const ctext *t, size_t pos, size_t end) { return opt_space_then_run(t, pos, end, is_ds_letter); }
static size_t m_ds_punct(const ctext *t, size_t pos, size_t end)   { return opt_space_then_run(t, pos, end, is_ds_punct); }
static size_t m_ds_cjk(const ctext *t, size_t pos, size_t end)     { return run_of(t, pos, end, is_ds_cjk); }
static size_t m_space_letters(const ctext *t, size_t pos, size_t end) { return opt_space_then_run(t, pos, end, is_l); }
static size_t m_space_punct(const ctext *t, size_t pos, size_t end)   { return opt_space_then_run(t, pos, end, is_p); }

/* [\p{P}\$\+<=>\^~\|]+ (and with ` for Falcon) */
static int is_default_punct(const ctext *t, size_t i) {
    uint32_t c = t->cp[i];
    return is_p(t, i) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|';
}
static int is_falcon_punct(const ctext *t, size_t i) { return is_default_punct(t, i) || t->cp[i] == '`'; }
static size_t m_default_punct(const ctext *t, size_t pos, size_t end) { return run_of(t, pos, end, is_default_punct); }
static size_t m_falcon_punct(const ctext *t, size_t pos, size_t end)  { return run_of(t, pos, end, is_falcon_punct); }

/* ------------------------------------------------------------------ chains */

#define MAX_STAGES 6
static const struct chain {
    matcher stage[MAX_STAGES];  /* applied in order; NULL ends the chain */
} chains[UPRE_COUNT] = {
    [UPRE_GPT2]           = { { m_gpt2 } },
    [UPRE_LLAMA3]         = { { m_llama3 } },
    [UPRE_QWEN2]          = { { m_qwen2 } },
    [UPRE_DEEPSEEK_LLM]   = { { m_newline, m_ds_letters, m_ds_punct, m_space_to_end, m_ds_cjk, m_digit_run } },
    [UPRE_DEEPSEEK_CODER] = { { m_newline, m_space_letters, m_space_punct, m_ds_cjk, m_digit } },
    [UPRE_STARCODER]      = { { m_digit, m_gpt2 } },
    [UPRE_FALCON]         = { { m_falcon_punct, m_gpt2, m_ascii_digit3 } },
    [UPRE_DEFAULT]        = { { m_default_punct, m_gpt2, m_digit_run, m_ascii_digit3 } },
};

/* ------------------------------------------------------------------ splitter */

typedef struct piece { uint32_t lo, hi; } piece;   /* code-point range [lo, hi) */

/* Split every piece of in[] by matcher m into out[] (room for n_chars pieces suffices:
 * pieces are non-empty and disjoint). Returns the number of pieces written. */
static size_t split_stage(const ctext *t, matcher m, const piece *in, size_t n_in, piece *out) {
    size_t n_out = 0;
    for (size_t k = 0; k < n_in; k++) {
        size_t end = in[k].hi, gap = in[k].lo, pos = in[k].lo;
        while (pos < end) {
            size_t len = m(t, pos, end);
            if (!len) { pos++; continue; }
            if (gap < pos) out[n_out++] = (piece){ (uint32_t)gap, (uint32_t)pos };
            out[n_out++] = (piece){ (uint32_t)pos, (uint32_t)(pos + len) };
            pos += len;
            gap = pos;
        }
        if (gap < end) out[n_out++] = (piece){ (uint32_t)gap, (uint32_t)end };
    }
    return n_out;
}

int upre_split(upre_kind kind, const char *text, size_t len, upre_span **spans, size_t *n, um_err *e) {
    *spans = NULL;
    *n = 0;
    if ((unsigned)kind >= UPRE_COUNT) return um_errf(e, "unknown pre-tokenizer kind %d", (int)kind);
    if (len >= UINT32_MAX) return um_errf(e, "text of %zu bytes is too long to tokenize (limit 4 GiB)", len);
    if (len == 0) return UM_OK;

    /* len code points at most: one allocation for cp, off, cls and two piece buffers */
    uint32_t *cp  = malloc(len * sizeof *cp);
    uint32_t *off = malloc((len + 1) * sizeof *off);    /* byte offset of each code point, + end */
    uint8_t  *cls = malloc(len);
    piece    *a   = malloc(len * sizeof *a);
    piece    *b   = malloc(len * sizeof *b);
    if (!cp || !off || !cls || !a || !b) {
        free(cp); free(off); free(cls); free(a); free(b);
        return um_errf(e, "out of memory splitting %zu bytes of text", len);
    }

    const uint8_t *s = (const uint8_t *)text;
    size_t nc = 0;
    for (size_t i = 0; i < len; ) {
        uint32_t c;
        size_t k = upre_utf8_decode(s + i, len - i, &c);
        cp[nc] = c;
        off[nc] = (uint32_t)i;
        cls[nc] = (uint8_t)upre_class(c);
        nc++;
        i += k;
    }
    off[nc] = (uint32_t)len;

    ctext t = { cp, cls };
    size_t np = 1;
    a[0] = (piece){ 0, (uint32_t)nc };
    for (int st = 0; st < MAX_STAGES && chains[kind].stage[st]; st++) {
        np = split_stage(&t, chains[kind].stage[st], a, np, b);
        piece *tmp = a; a = b; b = tmp;
    }

    upre_span *out = malloc(np * sizeof *out);
    if (!out) {
        free(cp); free(off); free(cls); free(a); free(b);
        return um_errf(e, "out of memory splitting %zu bytes of text", len);
    }
    for (size_t k = 0; k < np; k++)
        out[k] = (upre_span){ off[a[k].lo], off[a[k].hi] - off[a[k].lo] };
    free(cp); free(off); free(cls); free(a); free(b);
    *spans = out;
    *n = np;
    return UM_OK;
}
