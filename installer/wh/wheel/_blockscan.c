/*
 * Where a dynamic-Huffman deflate block could start in a stretch of compressed bytes.
 *
 * deflatetail.py looks for block starts far into a zip member. Its pure-Python search
 * (dynamic_candidates) tests the first fields of a block header at every bit position at
 * once, and leaves about one position in a thousand to be tried with zlib. This module
 * does the same tests one position at a time and goes on to read the whole header as
 * zlib's inflate reads it (the code-length code, then the literal/length and distance
 * code lengths it codes, then whether each code is a prefix code zlib accepts), so
 * almost every position it returns is a true start, and none that zlib would take as a
 * header is left out. The caller still tries each one with zlib; this only spares it the
 * positions whose header zlib refuses.
 *
 * Plain C (C99 with the limited API of Python 3.10), no compiler builtins, so that MSVC,
 * gcc and clang build it alike. It is optional: where it was not built, deflatetail.py
 * uses its own search, with the same result.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* the order in which a header gives the code-length code's lengths (RFC 1951, 3.2.7) */
static const uint8_t CL_ORDER[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5,
                                     11, 4,  12, 3, 13, 2, 14, 1, 15};

/* each code length's share of a complete code of lengths up to 7, times 128 */
static const int KRAFT[8] = {0, 64, 32, 16, 8, 4, 2, 1};
/* the same summed over four 3-bit lengths, filled once by the module's init */
static uint16_t KRAFT4[4096];

/* 64 bits of the stream from bit ``q`` on, low bit first; zeros past ``n`` bytes */
static uint64_t peek(const uint8_t *d, Py_ssize_t n, uint64_t q)
{
    Py_ssize_t at = (Py_ssize_t)(q >> 3);
    unsigned shift = (unsigned)(q & 7);
    uint64_t v = 0;
    int i;
    if (at + 9 <= n) {
        for (i = 7; i >= 0; i--)
            v = (v << 8) | d[at + i];
    } else {
        for (i = 7; i >= 0; i--)
            v = (v << 8) | (at + i < n ? d[at + i] : 0);
    }
    if (shift) {
        v >>= shift;
        if (at + 8 < n)
            v |= (uint64_t)d[at + 8] << (64 - shift);
    }
    return v;
}

/* whether ``count[1..maxbits]`` lengths make a code zlib's inflate_table accepts: never
 * over-subscribed, and complete unless ``single_ok`` and the longest length is 1 */
static int code_ok(const int *count, int maxbits, int single_ok)
{
    int64_t left = 1;
    int len, longest = 0;
    for (len = 1; len <= maxbits; len++) {
        left = (left << 1) - count[len];
        if (left < 0)
            return 0;
        if (count[len])
            longest = len;
    }
    if (longest == 0)
        return 1; /* no codes at all: zlib builds a table that fails when used */
    return left == 0 || (single_ok && longest == 1);
}

/* whether a dynamic block header starting at bit ``p`` is one zlib accepts, read within
 * ``n`` bytes of ``d`` */
static int header_ok(const uint8_t *d, Py_ssize_t n, uint64_t p)
{
    uint64_t end = (uint64_t)n * 8, q, v;
    int nlen, ndist, ncode, i, k, total, have;
    int32_t lit_sum, dist_sum;
    uint8_t cl[19];
    int count[16];
    uint8_t lens[286 + 30];
    /* the code-length code as a table on the next 7 bits: symbol, and its length */
    uint8_t tsym[128], tlen[128];

    if (p + 17 > end)
        return 0;
    v = peek(d, n, p);
    if ((v & 6) != 4) /* BTYPE, low bit first: 0 then 1 */
        return 0;
    nlen = (int)((v >> 3) & 31) + 257;
    ndist = (int)((v >> 8) & 31) + 1;
    ncode = (int)((v >> 13) & 15) + 4;
    if (nlen > 286 || ndist > 30)
        return 0;
    q = p + 17;
    if (q + 3 * (uint64_t)ncode > end)
        return 0;
    v = peek(d, n, q);
    memset(cl, 0, sizeof cl);
    for (i = 0; i < ncode; i++)
        cl[CL_ORDER[i]] = (uint8_t)((v >> (3 * i)) & 7);
    q += 3 * (uint64_t)ncode;
    memset(count, 0, sizeof count);
    for (i = 0; i < 19; i++)
        count[cl[i]]++;
    /* the code-length code must be complete: zlib refuses an incomplete one here, even of
     * a single code, and one of no codes at all cannot code the lengths */
    if (count[0] == 19 || !code_ok(count, 7, 0))
        return 0;
    {
        /* canonical codes, first bit read as the top bit: the table is indexed by the
         * next 7 bits low bit first, so each code is entered bit-reversed */
        int next[8], code = 0;
        next[0] = 0;
        for (k = 1; k <= 7; k++) { /* RFC 1951 3.2.2, zero lengths not counted */
            code = (code + (k > 1 ? count[k - 1] : 0)) << 1;
            next[k] = code;
        }
        for (i = 0; i < 19; i++) {
            int len = cl[i], c, r = 0, fill;
            if (!len)
                continue;
            c = next[len]++;
            for (k = 0; k < len; k++)
                r |= ((c >> k) & 1) << (len - 1 - k);
            for (fill = r; fill < 128; fill += 1 << len) {
                tsym[fill] = (uint8_t)i;
                tlen[fill] = (uint8_t)len;
            }
        }
    }
    total = nlen + ndist;
    have = 0;
    /* each code's share of the Kraft sum so far, times 2**15: past 2**15 a code is
     * over-subscribed, which zlib refuses, so most false starts stop here early */
    lit_sum = dist_sum = 0;
    while (have < total) {
        int sym, len, copy;
        if (q >= end)
            return 0;
        v = peek(d, n, q);
        sym = tsym[v & 127];
        len = tlen[v & 127];
        q += (uint64_t)len;
        v >>= len;
        if (sym < 16) {
            len = sym;
            copy = 1;
        } else if (sym == 16) {
            if (have == 0)
                return 0;
            len = lens[have - 1];
            copy = 3 + (int)(v & 3);
            q += 2;
        } else if (sym == 17) {
            len = 0;
            copy = 3 + (int)(v & 7);
            q += 3;
        } else {
            len = 0;
            copy = 11 + (int)(v & 127);
            q += 7;
        }
        if (have + copy > total)
            return 0;
        while (copy--) {
            if (len) {
                if (have < nlen) {
                    lit_sum += (int32_t)1 << (15 - len);
                    if (lit_sum > 32768)
                        return 0;
                } else {
                    dist_sum += (int32_t)1 << (15 - len);
                    if (dist_sum > 32768)
                        return 0;
                }
            }
            lens[have++] = (uint8_t)len;
        }
    }
    if (q > end)
        return 0;
    if (lens[256] == 0)
        return 0; /* no end-of-block code */
    memset(count, 0, sizeof count);
    for (i = 0; i < nlen; i++)
        count[lens[i]]++;
    if (!code_ok(count, 15, 1))
        return 0;
    memset(count, 0, sizeof count);
    for (i = nlen; i < total; i++)
        count[lens[i]]++;
    return code_ok(count, 15, 1);
}

static PyObject *dynamic_headers(PyObject *self, PyObject *args)
{
    const char *buf;
    Py_ssize_t n, limit, p;
    PyObject *out, *item;
    const uint8_t *data;
    uint64_t lo = 0, hi = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#n:dynamic_headers", &buf, &n, &limit))
        return NULL;
    data = (const uint8_t *)buf;
    if (limit < 0 || (limit >> 3) + ((limit & 7) != 0) > n) {
        PyErr_SetString(PyExc_ValueError, "limit must lie within the data's bits");
        return NULL;
    }
    out = PyList_New(0);
    if (!out)
        return NULL;
    for (p = 0; p < limit; p++) {
        /* the first fields of the header at ``p``: the type, the counts, and the Kraft sum
         * of the code-length code's lengths (17 + 3 * 19 = 74 bits, from two words read
         * once per byte), computed without branches; only the rare position that passes
         * all of them is read further */
        unsigned shift = (unsigned)(p & 7), ncode, sum, ok;
        uint64_t v, w;
        if (shift == 0) {
            lo = peek(data, n, (uint64_t)p);
            hi = peek(data, n, (uint64_t)p + 64);
        }
        v = shift ? (lo >> shift) | (hi << (64 - shift)) : lo;
        w = (v >> 17) | ((hi >> shift) << 47);
        ncode = (unsigned)((v >> 13) & 15) + 4;
        w &= ((uint64_t)1 << (3 * ncode)) - 1; /* lengths past HCLEN + 4 are absent */
        sum = KRAFT4[w & 4095] + KRAFT4[(w >> 12) & 4095] + KRAFT4[(w >> 24) & 4095] +
              KRAFT4[(w >> 36) & 4095] + KRAFT4[(w >> 48) & 4095];
        ok = ((v & 6) == 4) & (((v >> 3) & 31) <= 29) & (((v >> 8) & 31) <= 29) & (sum == 128);
        if (!ok || !header_ok(data, n, (uint64_t)p))
            continue;
        item = PyLong_FromSsize_t(p);
        if (!item || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"dynamic_headers", dynamic_headers, METH_VARARGS,
     "dynamic_headers(data, limit, /)\n--\n\n"
     "Bit offsets below ``limit`` where a dynamic block header starts that zlib's\n"
     "inflate accepts, read wholly within ``data``. Ascending."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_blockscan", "Where deflate blocks could start (see the C source).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__blockscan(void)
{
    int i;
    for (i = 0; i < 4096; i++)
        KRAFT4[i] = (uint16_t)(KRAFT[i & 7] + KRAFT[(i >> 3) & 7] + KRAFT[(i >> 6) & 7] +
                               KRAFT[(i >> 9) & 7]);
    return PyModule_Create(&module);
}
