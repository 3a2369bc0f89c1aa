// CRC-32C, reflected, polynomial 0x82F63B78, initial and final value 0xFFFFFFFF applied inside so
// that callers continue from the finished value (crc32c_update(0, "123456789", 9) == 0xE3069283).
//
// Why these paths:
// - x86-64 SSE4.2 and ARMv8 have a CRC-32C instruction that takes 8 bytes a step. Its latency is
//   about 3 cycles but a new one can start every cycle, so one dependent chain uses a third of the
//   unit: the input is cut into three adjacent blocks whose CRCs run interleaved and are then joined
//   by "shifting" the earlier CRC over the later block's length (multiplying by x^(8n) mod P, done
//   with four 256-entry tables per block length). That is the method of Mark Adler's crc32c.c.
// - Without the instruction, slicing-by-8: eight 256-entry tables fold 8 bytes per step with eight
//   independent lookups, several times faster than the byte-at-a-time table.
// - The path is chosen once, at first use, by asking the CPU (cpuid / AT_HWCAP), and the fast
//   function carries __attribute__((target(...))) so the rest of the build needs no -msse4.2.
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#endif

#define POLY 0x82F63B78u

// Interleaved block lengths, powers of two: LONG for bulk data, SHORT for what remains; the
// shift tables make the join cost four lookups per block, so blocks long enough to hide it.
#define LONG 8192
#define SHORT 256

static uint32_t slicing[8][256];
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static uint32_t (*update_function)(uint32_t, const unsigned char *, size_t);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);   // unaligned-safe; compiles to one load
    return v;
}

// --- slicing-by-8 -------------------------------------------------------------------------------

static uint32_t update_software(uint32_t crc, const unsigned char *p, size_t n) {
    while (n >= 8) {
        uint64_t word = load64(p);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);   // the first byte must meet the register's low byte
#endif
        word ^= crc;
        crc = slicing[7][word & 0xFF] ^ slicing[6][(word >> 8) & 0xFF] ^
              slicing[5][(word >> 16) & 0xFF] ^ slicing[4][(word >> 24) & 0xFF] ^
              slicing[3][(word >> 32) & 0xFF] ^ slicing[2][(word >> 40) & 0xFF] ^
              slicing[1][(word >> 48) & 0xFF] ^ slicing[0][word >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = slicing[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

// --- joining interleaved CRCs -------------------------------------------------------------------

// A CRC register fed `len` zero bytes is a linear map over GF(2): a 32x32 bit matrix, one uint32_t
// column per input bit. These build that matrix by repeated squaring of the one-zero-bit operator.
static uint32_t matrix_times(const uint32_t *matrix, uint32_t vector) {
    uint32_t sum = 0;
    for (; vector; vector >>= 1, matrix++)
        if (vector & 1) sum ^= *matrix;
    return sum;
}

static void matrix_square(uint32_t *square, const uint32_t *matrix) {
    for (int n = 0; n < 32; n++) square[n] = matrix_times(matrix, matrix[n]);
}

// The tables that move a register over `len` zero bytes (`len` a power of two), a byte at a time.
static void build_shift(uint32_t table[4][256], size_t len) {
    uint32_t op[32], other[32];
    op[0] = POLY;   // one zero bit: shift right, folding in the polynomial for the bit shifted out
    for (int n = 1; n < 32; n++) op[n] = 1u << (n - 1);
    for (size_t bits = 1; bits < len * 8; bits <<= 1) {
        matrix_square(other, op);
        memcpy(op, other, sizeof op);
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 0; k < 4; k++) table[k][n] = matrix_times(op, n << (8 * k));
}

static inline uint32_t shift(uint32_t table[4][256], uint32_t crc) {
    return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^
           table[2][(crc >> 16) & 0xFF] ^ table[3][crc >> 24];
}

// --- the instruction, three streams at a time ---------------------------------------------------

#if defined(__x86_64__)
#define HW_TARGET __attribute__((target("sse4.2")))
#define HW_U64(crc, v) ((uint32_t)_mm_crc32_u64((crc), (v)))
#define HW_U8(crc, v) _mm_crc32_u8((crc), (v))
#elif defined(__aarch64__)
#define HW_TARGET __attribute__((target("crc")))
#define HW_U64(crc, v) __crc32cd((crc), (v))
#define HW_U8(crc, v) __crc32cb((crc), (v))
#endif

#ifdef HW_TARGET
// Three blocks of `block` bytes at p, p+block, p+2*block, joined into crc.
#define HW_INTERLEAVED(block, table)                                          \
    while (n >= 3 * (block)) {                                                \
        uint32_t crc1 = 0, crc2 = 0;                                          \
        const unsigned char *end = p + (block);                               \
        do {                                                                  \
            crc = HW_U64(crc, load64(p));                                     \
            crc1 = HW_U64(crc1, load64(p + (block)));                         \
            crc2 = HW_U64(crc2, load64(p + 2 * (block)));                     \
            p += 8;                                                           \
        } while (p < end);                                                    \
        crc = shift(table, crc) ^ crc1;                                       \
        crc = shift(table, crc) ^ crc2;                                       \
        p += 2 * (block);                                                     \
        n -= 3 * (block);                                                     \
    }

HW_TARGET static uint32_t update_hardware(uint32_t crc, const unsigned char *p, size_t n) {
    HW_INTERLEAVED(LONG, shift_long)
    HW_INTERLEAVED(SHORT, shift_short)
    for (; n >= 8; p += 8, n -= 8) crc = HW_U64(crc, load64(p));
    while (n--) crc = HW_U8(crc, *p++);
    return crc;
}

static int cpu_has_instruction(void) {
#if defined(__x86_64__)
    return __builtin_cpu_supports("sse4.2");
#else
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
}
#endif

// --- choosing -----------------------------------------------------------------------------------

static void initialize(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ POLY : crc >> 1;
        slicing[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            slicing[k][n] = slicing[0][slicing[k - 1][n] & 0xFF] ^ (slicing[k - 1][n] >> 8);
    update_function = update_software;
#ifdef HW_TARGET
    if (cpu_has_instruction()) {
        build_shift(shift_long, LONG);
        build_shift(shift_short, SHORT);
        update_function = update_hardware;
    }
#endif
}

uint32_t crc32c_update(uint32_t crc, const void *bytes, size_t length) {
    pthread_once(&once, initialize);
    return ~update_function(~crc, bytes, length);
}

uint32_t crc32c_update_software(uint32_t crc, const void *bytes, size_t length) {
    pthread_once(&once, initialize);
    return ~update_software(~crc, bytes, length);
}

int crc32c_uses_hardware(void) {
    pthread_once(&once, initialize);
    return update_function != update_software;
}
