// Self-test of the collective tests' reference (ref.c): the half-type
// conversions round to nearest even directly from double, and the
// generators keep the promises the tolerances rely on. No communication.
#include <math.h>
#include <string.h>

#include "mptest.h"
#include "ref.h"

// Float to bfloat16, round to nearest even, by the usual bit trick (valid
// for non-NaN floats).
static uint16_t
bf16_of_float(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    return (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static int
check_half(const char *name, uint16_t (*to)(double), double (*from)(uint16_t),
    uint16_t           max_finite)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        double v = from((uint16_t) h);
        if (isnan(v)) {
            MP_CHECK(isnan(from(to(v))));
            continue;
        }
        if (to(v) != h) {
            fprintf(stderr, "%s: 0x%04x -> %.17g -> 0x%04x\n", name,
                (unsigned) h, v, (unsigned) to(v));
            return 1;
        }
        // Midpoints to the next value up (same sign) round to the even
        // neighbour, and anything off the midpoint to the nearer one:
        // directly, with no double rounding through float.
        uint16_t mag = h & 0x7fff;
        if (mag >= max_finite) {
            continue;
        }
        double   up   = from((uint16_t) (h + 1));
        double   mid  = v + (up - v) / 2;
        uint16_t even = (h & 1) ? (uint16_t) (h + 1) : (uint16_t) h;
        double   tiny = fabs(up - v) * 0x1p-30;
        double lo = v > 0 || (v == 0 && !signbit(v)) ? mid - tiny : mid + tiny;
        double hi = v > 0 || (v == 0 && !signbit(v)) ? mid + tiny : mid - tiny;
        if (to(mid) != even || to(lo) != h || to(hi) != (uint16_t) (h + 1)) {
            fprintf(stderr,
                "%s: rounding near 0x%04x: mid %.17g -> 0x%04x, below -> "
                "0x%04x, above -> 0x%04x\n",
                name, (unsigned) h, mid, (unsigned) to(mid), (unsigned) to(lo),
                (unsigned) to(hi));
            return 1;
        }
    }
    return 0;
}

int
mp_case_coll_ref(shoal_comm *comm, int argc, char **argv)
{
    (void) comm;
    (void) argc;
    (void) argv;
    MP_CHECK(check_half("float16", ref_d_to_f16, ref_f16_to_d, 0x7bff) == 0);
    MP_CHECK(
        check_half("bfloat16", ref_d_to_bf16, ref_bf16_to_d, 0x7f7f) == 0);
    // Overflow and the largest values.
    MP_CHECK(ref_d_to_f16(65504.0) == 0x7bff);
    MP_CHECK(ref_d_to_f16(65519.99) == 0x7bff);
    MP_CHECK(ref_d_to_f16(65520.0) == 0x7c00);
    MP_CHECK(ref_d_to_f16(-1e9) == 0xfc00);
    MP_CHECK(ref_d_to_f16(0x1p-25) == 0x0000); // tie to even (zero)
    MP_CHECK(ref_d_to_f16(0x1.8p-25) == 0x0001);
    MP_CHECK(ref_d_to_bf16(1.0) == 0x3f80 && ref_d_to_bf16(-2.0) == 0xc000);
    // bfloat16 agrees with the bit trick on floats.
    uint64_t h = 12345;
    for (int i = 0; i < 1000000; i++) {
        h          = ref_mix(h);
        uint32_t u = (uint32_t) h;
        float    x;
        memcpy(&x, &u, 4);
        if (isnan(x)) {
            continue;
        }
        if (ref_d_to_bf16(x) != bf16_of_float(x)) {
            fprintf(stderr, "bfloat16 of %.9g: 0x%04x, bit trick 0x%04x\n",
                (double) x, (unsigned) ref_d_to_bf16(x),
                (unsigned) bf16_of_float(x));
            return 1;
        }
    }
    // The fast paths (values exactly floats) agree with the generic
    // rounding, on random floats of every magnitude and on random doubles.
    for (int i = 0; i < 2000000; i++) {
        h          = ref_mix(h);
        uint32_t u = (uint32_t) h;
        float    x;
        double   d;
        memcpy(&x, &u, 4);
        memcpy(&d, &h, 8);
        if (i % 2) {
            d = ldexp((double) (h >> 11) * 0x1p-53, (int) (h % 80) - 40);
        }
        if (isnan(x) || isnan(d)) {
            continue;
        }
        if (ref_d_to_f16(x) != ref_round_half(x, 0)
            || ref_d_to_bf16(x) != ref_round_half(x, 1)
            || ref_d_to_f16(d) != ref_round_half(d, 0)
            || ref_d_to_bf16(d) != ref_round_half(d, 1)) {
            fprintf(stderr,
                "fast and generic rounding differ at %.9g / %.17g\n",
                (double) x, d);
            return 1;
        }
#ifdef __FLT16_MAX__
        // And with the compiler's own conversion, where it has one.
        _Float16 hf = (_Float16) d;
        uint16_t hb;
        memcpy(&hb, &hf, 2);
        if (ref_d_to_f16(d) != hb) {
            fprintf(stderr, "float16 of %.17g: 0x%04x, compiler 0x%04x\n", d,
                (unsigned) ref_d_to_f16(d), (unsigned) hb);
            return 1;
        }
#endif
    }
    // Generated half inputs are multiples of 1/64 up to 16, so half-type
    // sums (and products with a dyadic scalar) are exact in float32.
    for (int dt = SHOAL_FLOAT16; dt <= SHOAL_BFLOAT16; dt++) {
        for (int cls = REF_SUM; cls <= REF_MINMAX; cls++) {
            uint64_t key = ref_key(7, (ref_class) cls, 3);
            for (size_t i = 0; i < 10000; i++) {
                double v = ref_to_double((shoal_dtype) dt,
                    ref_gen((shoal_dtype) dt, (ref_class) cls, key, i));
                MP_CHECK(
                    v * 64 == (double) (long long) (v * 64) && fabs(v) <= 16);
                MP_CHECK(cls != REF_MINMAX || v != 0);
            }
        }
    }
    // Bool inputs are 0 or 1.
    for (size_t i = 0; i < 1000; i++) {
        MP_CHECK(ref_gen(SHOAL_BOOL, REF_MOVE, 5, i) <= 1);
    }
    printf("reference self-test passed\n");
    return 0;
}
