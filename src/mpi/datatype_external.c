/*
 * MPI_Pack_external, MPI_Unpack_external, MPI_Pack_external_size (and _c
 * forms) for the one data representation the standard defines, "external32"
 * (MPI 4.1, 13.5.2): big-endian two's complement integers, big-endian IEEE
 * floating point, the sizes of the standard's table whatever the native ones
 * (MPI_LONG is 4 bytes, MPI_WCHAR 2, MPI_LONG_DOUBLE a 16-byte IEEE quad).
 *
 * The data goes through the engine first: hashi_type_pack / unpack give the
 * native stream (the basic elements in type-map order, nothing else), and a
 * walk over the type's constructor envelope converts that stream element by
 * element. Contiguous data is converted in place, other layouts through a
 * staging buffer of at most STAGE_BYTES (whole elements at a time).
 */
#include "mpi/datatype_internal.h"

#include <float.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#define STAGE_BYTES (64 * 1024)

enum ext_kind {
    EXT_COPY,       /* one byte, nothing to do */
    EXT_SWAP,       /* same size: byte order only, per unit (a complex has two) */
    EXT_INT,        /* signed integer whose sizes differ (MPI_LONG: 8 -> 4) */
    EXT_UINT,       /* unsigned integer whose sizes differ (MPI_UNSIGNED_LONG, MPI_WCHAR) */
    EXT_LDOUBLE,    /* long double <-> IEEE binary128, per part */
    EXT_NONE        /* no conversion on this platform */
};

/* The standard's table: external32 size, parts (2 for complex types),
 * whether a size change is signed, whether the parts are long doubles. */
struct ext_spec {
    MPI_Datatype handle;
    unsigned char ext, parts, is_signed, is_ldouble;
};

#define INT_T(h, e)   { h, e, 1, 1, 0 }
#define UINT_T(h, e)  { h, e, 1, 0, 0 }
#define FLT_T(h, e)   { h, e, 1, 0, 0 }
#define CPLX_T(h, e)  { h, e, 2, 0, 0 }
#define LDBL_T(h, e, parts) { h, e, parts, 0, 1 }

static const struct ext_spec ext_specs[] = {
    INT_T(MPI_PACKED, 1), INT_T(MPI_BYTE, 1), INT_T(MPI_CHAR, 1), UINT_T(MPI_UNSIGNED_CHAR, 1),
    INT_T(MPI_SIGNED_CHAR, 1), UINT_T(MPI_WCHAR, 2), INT_T(MPI_SHORT, 2), UINT_T(MPI_UNSIGNED_SHORT, 2),
    INT_T(MPI_INT, 4), INT_T(MPI_LONG, 4), UINT_T(MPI_UNSIGNED, 4), UINT_T(MPI_UNSIGNED_LONG, 4),
    INT_T(MPI_LONG_LONG, 8), UINT_T(MPI_UNSIGNED_LONG_LONG, 8),
    FLT_T(MPI_FLOAT, 4), FLT_T(MPI_DOUBLE, 8), LDBL_T(MPI_LONG_DOUBLE, 16, 1),
    UINT_T(MPI_C_BOOL, 1), UINT_T(MPI_CXX_BOOL, 1),
    INT_T(MPI_INT8_T, 1), INT_T(MPI_INT16_T, 2), INT_T(MPI_INT32_T, 4), INT_T(MPI_INT64_T, 8),
    UINT_T(MPI_UINT8_T, 1), UINT_T(MPI_UINT16_T, 2), UINT_T(MPI_UINT32_T, 4), UINT_T(MPI_UINT64_T, 8),
    INT_T(MPI_AINT, 8), INT_T(MPI_COUNT, 8), INT_T(MPI_OFFSET, 8),
    CPLX_T(MPI_C_FLOAT_COMPLEX, 8), CPLX_T(MPI_C_DOUBLE_COMPLEX, 16), LDBL_T(MPI_C_LONG_DOUBLE_COMPLEX, 32, 2),
    CPLX_T(MPI_CXX_FLOAT_COMPLEX, 8), CPLX_T(MPI_CXX_DOUBLE_COMPLEX, 16),
    LDBL_T(MPI_CXX_LONG_DOUBLE_COMPLEX, 32, 2),
    INT_T(MPI_CHARACTER, 1), INT_T(MPI_LOGICAL, 4), INT_T(MPI_INTEGER, 4), FLT_T(MPI_REAL, 4),
    FLT_T(MPI_DOUBLE_PRECISION, 8), CPLX_T(MPI_COMPLEX, 8), CPLX_T(MPI_DOUBLE_COMPLEX, 16),
    INT_T(MPI_INTEGER1, 1), INT_T(MPI_INTEGER2, 2), INT_T(MPI_INTEGER4, 4), INT_T(MPI_INTEGER8, 8),
    INT_T(MPI_INTEGER16, 16), FLT_T(MPI_REAL2, 2), FLT_T(MPI_REAL4, 4), FLT_T(MPI_REAL8, 8),
    FLT_T(MPI_REAL16, 16), CPLX_T(MPI_COMPLEX4, 4), CPLX_T(MPI_COMPLEX8, 8), CPLX_T(MPI_COMPLEX16, 16),
    CPLX_T(MPI_COMPLEX32, 32), INT_T(MPI_LOGICAL1, 1), INT_T(MPI_LOGICAL2, 2), INT_T(MPI_LOGICAL4, 4),
    INT_T(MPI_LOGICAL8, 8), INT_T(MPI_LOGICAL16, 16),
};
#define NSPECS (sizeof ext_specs / sizeof ext_specs[0])

/* How one basic type converts here, indexed by handle (predefined handles
 * are in [0x200, 0x300)); filled once. */
#define HANDLE_BASE 0x200u
#define HANDLE_SPAN 0x100u
struct ext_conv {
    unsigned char kind;     /* enum ext_kind; 0 with ext 0: not a basic type */
    unsigned char parts;
    unsigned short native, ext;  /* bytes of one element */
};
static struct ext_conv conv_table[HANDLE_SPAN];
static once_flag conv_once = ONCE_FLAG_INIT;

/* Whether long double has a conversion to binary128 here. */
#if LDBL_MANT_DIG == 113
#define LDOUBLE_IS_QUAD 1
#elif LDBL_MANT_DIG == 64 && defined(__SIZEOF_FLOAT128__)
#define LDOUBLE_VIA_FLOAT128 1
#endif

static void conv_table_init(void)
{
    for (size_t i = 0; i < NSPECS; i++) {
        const struct ext_spec *s = &ext_specs[i];
        const struct MPI_ABI_Datatype *t = hashi_type_get(s->handle);
        uintptr_t slot = (uintptr_t)s->handle - HANDLE_BASE;
        if (!t || slot >= HANDLE_SPAN)
            continue;
        struct ext_conv *c = &conv_table[slot];
        c->native = (unsigned short)t->size;
        c->ext = s->ext;
        c->parts = s->parts;
        if (s->is_ldouble) {
#if defined(LDOUBLE_IS_QUAD)
            c->kind = EXT_SWAP;
#elif defined(LDOUBLE_VIA_FLOAT128)
            c->kind = t->size == (MPI_Count)sizeof(long double) * s->parts ? EXT_LDOUBLE : EXT_NONE;
#else
            c->kind = EXT_NONE;
#endif
        } else if (t->size == s->ext) {
            c->kind = s->ext / s->parts == 1 ? EXT_COPY : EXT_SWAP;
        } else if (s->parts == 1 && t->size <= 8 && s->ext <= 8) {
            c->kind = s->is_signed ? EXT_INT : EXT_UINT;
        } else {
            c->kind = EXT_NONE;
        }
    }
}

static const struct ext_conv *conv_of(MPI_Datatype basic)
{
    uintptr_t slot = (uintptr_t)basic - HANDLE_BASE;
    if (slot >= HANDLE_SPAN || conv_table[slot].ext == 0)
        return NULL;
    return &conv_table[slot];
}

/* ---- byte order ---- */

static inline void reverse_copy(unsigned char *dst, const unsigned char *src, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    memcpy(dst, src, n);
#else
    switch (n) {
    case 2: { uint16_t v; memcpy(&v, src, 2); v = __builtin_bswap16(v); memcpy(dst, &v, 2); return; }
    case 4: { uint32_t v; memcpy(&v, src, 4); v = __builtin_bswap32(v); memcpy(dst, &v, 4); return; }
    case 8: { uint64_t v; memcpy(&v, src, 8); v = __builtin_bswap64(v); memcpy(dst, &v, 8); return; }
    default:
        for (size_t i = 0; i < n; i++)
            dst[i] = src[n - 1 - i];
    }
#endif
}

/* An integer of n <= 8 native bytes, as 64 bits (sign- or zero-extended). */
static uint64_t load_native(const unsigned char *p, size_t n, int is_signed)
{
    switch (n) {
    case 1: { int8_t s; uint8_t u; memcpy(&s, p, 1); memcpy(&u, p, 1); return is_signed ? (uint64_t)(int64_t)s : u; }
    case 2: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2); return is_signed ? (uint64_t)(int64_t)s : u; }
    case 4: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4); return is_signed ? (uint64_t)(int64_t)s : u; }
    default: { uint64_t u; memcpy(&u, p, 8); return u; }
    }
}

static void store_native(unsigned char *p, size_t n, uint64_t v)
{
    switch (n) {
    case 1: { uint8_t u = (uint8_t)v; memcpy(p, &u, 1); return; }
    case 2: { uint16_t u = (uint16_t)v; memcpy(p, &u, 2); return; }
    case 4: { uint32_t u = (uint32_t)v; memcpy(p, &u, 4); return; }
    default: memcpy(p, &v, 8); return;
    }
}

/* Whether v (sign- or zero-extended 64 bits) fits in n bytes. */
static bool fits(uint64_t v, size_t n, int is_signed)
{
    if (n >= 8)
        return true;
    unsigned bits = (unsigned)n * 8;
    if (is_signed) {
        int64_t s = (int64_t)v;
        return s >= -(INT64_C(1) << (bits - 1)) && s < (INT64_C(1) << (bits - 1));
    }
    return v < (UINT64_C(1) << bits);
}

/* ---- the conversion walk ---- */

struct conv_run {
    int to_ext;                 /* pack: native -> external32; unpack: back */
    const unsigned char *in;
    unsigned char *out;
    /* the first failure */
    int failed;                 /* MPI_ERR_CONVERSION */
    MPI_Datatype bad_type;
    uint64_t bad_value;
};

static void conv_basic(struct conv_run *r, MPI_Datatype basic, const struct ext_conv *c, MPI_Count n)
{
    size_t in_size = r->to_ext ? c->native : c->ext, out_size = r->to_ext ? c->ext : c->native;
    const unsigned char *in = r->in;
    unsigned char *out = r->out;
    switch ((enum ext_kind)c->kind) {
    case EXT_COPY:
        memcpy(out, in, (size_t)n * in_size);
        break;
    case EXT_SWAP: {
        size_t unit = c->ext / c->parts, units = (size_t)n * c->parts;
        for (size_t i = 0; i < units; i++)
            reverse_copy(out + i * unit, in + i * unit, unit);
        break;
    }
    case EXT_INT:
    case EXT_UINT: {
        int is_signed = c->kind == EXT_INT;
        for (MPI_Count i = 0; i < n; i++) {
            unsigned char be[8];
            uint64_t v;
            if (r->to_ext) {
                v = load_native(in + i * in_size, in_size, is_signed);
            } else {
                uint64_t u = 0;
                memcpy(be, in + i * in_size, in_size);
                for (size_t b = 0; b < in_size; b++)
                    u = u << 8 | be[b];
                /* sign-extend from in_size bytes */
                if (is_signed && in_size < 8 && (u >> (in_size * 8 - 1) & 1))
                    u |= ~UINT64_C(0) << (in_size * 8);
                v = u;
            }
            if (!fits(v, out_size, is_signed)) {
                if (!r->failed) {
                    r->failed = MPI_ERR_CONVERSION;
                    r->bad_type = basic;
                    r->bad_value = v;
                }
                v = 0;   /* the output is undefined after a failure: keep it defined */
            }
            if (r->to_ext) {
                for (size_t b = 0; b < out_size; b++)
                    be[b] = (unsigned char)(v >> (8 * (out_size - 1 - b)));
                memcpy(out + i * out_size, be, out_size);
            } else {
                store_native(out + i * out_size, out_size, v);
            }
        }
        break;
    }
    case EXT_LDOUBLE: {
#if defined(LDOUBLE_VIA_FLOAT128)
        size_t units = (size_t)n * c->parts;
        for (size_t i = 0; i < units; i++) {
            if (r->to_ext) {
                long double v;
                memcpy(&v, in + i * sizeof v, sizeof v);
                __float128 q = (__float128)v;   /* exact: binary128 holds every x87 value */
                reverse_copy(out + i * 16, (const unsigned char *)&q, 16);
            } else {
                __float128 q;
                reverse_copy((unsigned char *)&q, in + i * 16, 16);
                long double v = (long double)q; /* rounds to 64 bits of mantissa */
                memset(out + i * sizeof v, 0, sizeof v);
                memcpy(out + i * sizeof v, &v, sizeof v);
            }
        }
#endif
        break;
    }
    case EXT_NONE:
        if (!r->failed) {
            r->failed = MPI_ERR_CONVERSION;
            r->bad_type = basic;
            r->bad_value = 0;
        }
        memset(out, 0, (size_t)n * out_size);
        break;
    }
    r->in += (size_t)n * in_size;
    r->out += (size_t)n * out_size;
}

/* Component blocks of a struct (or value-index) envelope entry. */
static MPI_Count struct_blocks(const struct hashi_type_envelope *env, MPI_Count i)
{
    if (env->combiner == MPI_COMBINER_VALUE_INDEX)
        return 1;
    return env->large ? env->larges[1 + i] : env->ints[1 + i];
}

/*
 * Convert n elements of t. The native stream of a derived type is its
 * components' streams in order: whole instances of the one component for
 * every combiner but struct and value-index (as in hashi_type_elements).
 */
static void conv_type(struct conv_run *r, const struct MPI_ABI_Datatype *t, MPI_Count n)
{
    if (n == 0 || t->size == 0)
        return;
    if (t->basic_type != MPI_DATATYPE_NULL) {
        const struct ext_conv *c = conv_of(t->basic_type);
        if (c) {
            conv_basic(r, t->basic_type, c, n * t->nelem);
            return;
        }
    }
    if (t->predefined) {
        /* a pair type (MPI_LONG_INT ...): value, then index */
        const struct MPI_ABI_Datatype *v = hashi_type_get(t->pair_value), *x = hashi_type_get(t->pair_index);
        for (MPI_Count i = 0; i < n; i++) {
            conv_type(r, v, 1);
            conv_type(r, x, 1);
        }
        return;
    }
    const struct hashi_type_envelope *env = t->envelope;
    if (env->combiner == MPI_COMBINER_STRUCT || env->combiner == MPI_COMBINER_VALUE_INDEX) {
        for (MPI_Count i = 0; i < n; i++)
            for (MPI_Count k = 0; k < env->nd; k++)
                conv_type(r, env->types[k], struct_blocks(env, k));
        return;
    }
    const struct MPI_ABI_Datatype *c = env->types[0];
    conv_type(r, c, n * (t->size / c->size));
}

/* Bytes of one element of t in external32. */
MPI_Count hashi_type_rep_size(const struct MPI_ABI_Datatype *t, hashi_type_rep_leaf_fn *leaf, void *arg)
{
    if (t->size == 0)
        return 0;
    if (t->basic_type != MPI_DATATYPE_NULL) {
        MPI_Count b = leaf(t->basic_type, arg);
        if (b >= 0)
            return t->nelem * b;
        if (b == -1)
            return -1;
    }
    if (t->predefined) {
        MPI_Count v = hashi_type_rep_size(hashi_type_get(t->pair_value), leaf, arg);
        MPI_Count x = v < 0 ? -1 : hashi_type_rep_size(hashi_type_get(t->pair_index), leaf, arg);
        return x < 0 ? -1 : v + x;
    }
    const struct hashi_type_envelope *env = t->envelope;
    if (env->combiner == MPI_COMBINER_STRUCT || env->combiner == MPI_COMBINER_VALUE_INDEX) {
        MPI_Count bytes = 0;
        for (MPI_Count k = 0; k < env->nd; k++) {
            MPI_Count b = hashi_type_rep_size(env->types[k], leaf, arg);
            if (b < 0)
                return -1;
            bytes += struct_blocks(env, k) * b;
        }
        return bytes;
    }
    const struct MPI_ABI_Datatype *c = env->types[0];
    MPI_Count b = hashi_type_rep_size(c, leaf, arg);
    return b < 0 ? -1 : (t->size / c->size) * b;
}

/* external32's bytes of a basic type (-2: no entry, look inside). */
static MPI_Count external32_leaf(MPI_Datatype basic, void *arg)
{
    (void)arg;
    const struct ext_conv *c = conv_of(basic);
    return c ? (MPI_Count)c->ext : -2;
}

MPI_Count hashi_type_external32_size(const struct MPI_ABI_Datatype *t)
{
    call_once(&conv_once, conv_table_init);
    return hashi_type_rep_size(t, external32_leaf, NULL);
}

/* ---- the MPI calls ---- */

static int check_datarep(const char *func, const char *datarep)
{
    if (!datarep)
        return hashi_err_type(func, MPI_ERR_ARG, "datarep is NULL");
    if (strcmp(datarep, "external32") != 0)
        return hashi_err_type(func, MPI_ERR_ARG, "data representation \"%.64s\" is not supported "
                              "(the only one is \"external32\")", datarep);
    return MPI_SUCCESS;
}

/* Shared checks; the type and the external32 bytes of count elements, or NULL after raising. */
static struct MPI_ABI_Datatype *external_args(const char *func, const char *datarep, MPI_Count count,
                                              MPI_Datatype datatype, int need_committed, MPI_Count *bytes, int *rc)
{
    call_once(&conv_once, conv_table_init);
    if ((*rc = check_datarep(func, datarep)) != MPI_SUCCESS)
        return NULL;
    if (count < 0) {
        *rc = hashi_err_type(func, MPI_ERR_COUNT, "count is negative (%lld)", (long long)count);
        return NULL;
    }
    struct MPI_ABI_Datatype *t = hashi_type_arg(func, "datatype", datatype, need_committed, rc);
    if (!t)
        return NULL;
    if (__builtin_mul_overflow(count, hashi_type_external32_size(t), bytes)) {
        *rc = hashi_err_type(func, MPI_ERR_COUNT, "count * external32 size of the datatype overflows");
        return NULL;
    }
    return t;
}

static int conversion_error(const char *func, const struct conv_run *r)
{
    const struct MPI_ABI_Datatype *b = hashi_type_get(r->bad_type);
    const struct ext_conv *c = conv_of(r->bad_type);
    if (c && c->kind == EXT_NONE)
        return hashi_err_type(func, MPI_ERR_CONVERSION, "%s has no external32 conversion on this platform",
                              b ? b->name : "a basic type");
    int is_signed = c && c->kind == EXT_INT;
    char value[32];
    if (is_signed)
        snprintf(value, sizeof value, "%lld", (long long)(int64_t)r->bad_value);
    else
        snprintf(value, sizeof value, "%llu", (unsigned long long)r->bad_value);
    return hashi_err_type(func, MPI_ERR_CONVERSION, "%s value %s does not fit in %u bytes (%s)",
                          b ? b->name : "an element", value, r->to_ext ? c->ext : c->native,
                          r->to_ext ? "its external32 size" : "its native size");
}

/*
 * Convert count elements between the user's layout and external32. ext is
 * the external32 side; native data is read (pack) or written (unpack) with
 * the engine, through a bounded staging buffer unless it is contiguous.
 */
static int convert(const char *func, void *user, MPI_Count count, const struct MPI_ABI_Datatype *t,
                   unsigned char *ext, int to_ext)
{
    struct conv_run r = { .to_ext = to_ext };
    if (hashi_type_is_contig_count(t, count)) {
        /* uintptr_t: MPI_BOTTOM (NULL) plus absolute displacements is fine */
        unsigned char *native = (unsigned char *)((uintptr_t)user + (uintptr_t)(count > 0 ? t->true_lb : 0));
        r.in = to_ext ? native : ext;
        r.out = to_ext ? ext : native;
        conv_type(&r, t, count);
        return r.failed ? conversion_error(func, &r) : MPI_SUCCESS;
    }
    MPI_Count per = t->size >= STAGE_BYTES ? 1 : STAGE_BYTES / t->size;
    if (per > count)
        per = count;
    unsigned char *stage = malloc((size_t)(per * t->size));
    if (!stage)
        return hashi_err_type(func, MPI_ERR_NO_MEM, "no memory for a %lld-byte staging buffer",
                              (long long)(per * t->size));
    unsigned char *e = ext;
    for (MPI_Count done = 0; done < count; done += per) {
        MPI_Count k = count - done < per ? count - done : per;
        size_t offset = (size_t)(done * t->size), len = (size_t)(k * t->size);
        if (to_ext) {
            hashi_type_pack(user, count, t, offset, stage, len);
            r.in = stage;
            r.out = e;
        } else {
            r.in = e;
            r.out = stage;
        }
        conv_type(&r, t, k);
        e = to_ext ? r.out : (unsigned char *)r.in;
        if (!to_ext)
            hashi_type_unpack(user, count, t, offset, stage, len);
    }
    free(stage);
    return r.failed ? conversion_error(func, &r) : MPI_SUCCESS;
}

/* The external32 buffer's part [*position, *position + bytes) of a buffer of
 * `size` bytes: there, and the buffer given when it is needed. */
static int check_window(const char *func, const char *buf_name, const void *buf, const char *size_name,
                        MPI_Count size, const MPI_Count *position, MPI_Count bytes)
{
    if (!position)
        return hashi_err_type(func, MPI_ERR_ARG, "position is NULL");
    if (size < 0 || *position < 0)
        return hashi_err_type(func, MPI_ERR_ARG, "%s is negative (%lld)", size < 0 ? size_name : "*position",
                              (long long)(size < 0 ? size : *position));
    if (bytes > size - *position)
        return hashi_err_type(func, MPI_ERR_TRUNCATE,
                              "%lld bytes of external32 data, but the buffer has %lld bytes after position %lld",
                              (long long)bytes, (long long)(size > *position ? size - *position : 0),
                              (long long)*position);
    if (bytes > 0 && !buf)
        return hashi_err_type(func, MPI_ERR_BUFFER, "%s is NULL", buf_name);
    return MPI_SUCCESS;
}

static int pack_external(const char *func, const char *datarep, const void *inbuf, MPI_Count incount,
                         MPI_Datatype datatype, void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    MPI_Count bytes;
    struct MPI_ABI_Datatype *t = external_args(func, datarep, incount, datatype, 1, &bytes, &rc);
    if (!t)
        return rc;
    if ((rc = check_window(func, "outbuf", outbuf, "outsize", outsize, position, bytes)) != MPI_SUCCESS)
        return rc;
    if (bytes > 0 && (rc = convert(func, (void *)inbuf, incount, t, (unsigned char *)outbuf + *position, 1)) !=
                     MPI_SUCCESS)
        return rc;
    *position += bytes;
    return MPI_SUCCESS;
}

int hashi_impl_Pack_external_c(const char *datarep, const void *inbuf, MPI_Count incount, MPI_Datatype datatype,
                               void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    return pack_external("MPI_Pack_external_c", datarep, inbuf, incount, datatype, outbuf, outsize, position);
}

int hashi_impl_Pack_external(const char *datarep, const void *inbuf, int incount, MPI_Datatype datatype,
                             void *outbuf, MPI_Aint outsize, MPI_Aint *position)
{
    MPI_Count pos = position ? *position : 0;
    int rc = pack_external("MPI_Pack_external", datarep, inbuf, incount, datatype, outbuf, outsize,
                           position ? &pos : NULL);
    if (rc == MPI_SUCCESS)
        *position = (MPI_Aint)pos;
    return rc;
}

static int unpack_external(const char *func, const char *datarep, const void *inbuf, MPI_Count insize,
                           MPI_Count *position, void *outbuf, MPI_Count outcount, MPI_Datatype datatype)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    MPI_Count bytes;
    struct MPI_ABI_Datatype *t = external_args(func, datarep, outcount, datatype, 1, &bytes, &rc);
    if (!t)
        return rc;
    if ((rc = check_window(func, "inbuf", inbuf, "insize", insize, position, bytes)) != MPI_SUCCESS)
        return rc;
    if (bytes > 0 && (rc = convert(func, outbuf, outcount, t, (unsigned char *)inbuf + *position, 0)) != MPI_SUCCESS)
        return rc;
    *position += bytes;
    return MPI_SUCCESS;
}

int hashi_impl_Unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize, MPI_Count *position,
                                 void *outbuf, MPI_Count outcount, MPI_Datatype datatype)
{
    return unpack_external("MPI_Unpack_external_c", datarep, inbuf, insize, position, outbuf, outcount, datatype);
}

int hashi_impl_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize, MPI_Aint *position,
                               void *outbuf, int outcount, MPI_Datatype datatype)
{
    MPI_Count pos = position ? *position : 0;
    int rc = unpack_external("MPI_Unpack_external", datarep, inbuf, insize, position ? &pos : NULL, outbuf,
                             outcount, datatype);
    if (rc == MPI_SUCCESS)
        *position = (MPI_Aint)pos;
    return rc;
}

static int pack_external_size(const char *func, const char *datarep, MPI_Count incount, MPI_Datatype datatype,
                              MPI_Count *size)
{
    HASHI_CHECK_INITIALIZED(func);
    int rc;
    MPI_Count bytes;
    if (!external_args(func, datarep, incount, datatype, 0, &bytes, &rc))
        return rc;
    if (!size)
        return hashi_err_type(func, MPI_ERR_ARG, "size is NULL");
    *size = bytes;
    return MPI_SUCCESS;
}

int hashi_impl_Pack_external_size_c(const char *datarep, MPI_Count incount, MPI_Datatype datatype, MPI_Count *size)
{
    return pack_external_size("MPI_Pack_external_size_c", datarep, incount, datatype, size);
}

int hashi_impl_Pack_external_size(const char *datarep, int incount, MPI_Datatype datatype, MPI_Aint *size)
{
    MPI_Count bytes = 0;
    int rc = pack_external_size("MPI_Pack_external_size", datarep, incount, datatype, size ? &bytes : NULL);
    if (rc == MPI_SUCCESS)
        *size = (MPI_Aint)bytes;
    return rc;
}
